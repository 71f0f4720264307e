//! Maps keys to shards by consistent hashing over virtual nodes.

use std::collections::BTreeMap;

use twox_hash::XxHash64;

/// Virtual nodes per shard, as kubernetes-controller-sharding's ring has.
pub(crate) const TOKENS_PER_SHARD: usize = 100;

/// A consistent-hash ring of shards: each shard owns 100 points (XXH64 of the
/// shard's name followed by the point's index) and a key goes to the shard of the first point at
/// or after the key's hash, wrapping around.
///
/// Adding a shard moves only the keys that now fall before its points (about `1 / shards` of
/// them), and removing one moves only its own keys. The hash and the tokens are
/// kubernetes-controller-sharding's, so its sharder and kubeward's assign alike.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HashRing {
    tokens: BTreeMap<u64, String>,
}

impl HashRing {
    /// The ring of `shards` (empty when there are none).
    #[must_use]
    pub fn new<'a>(shards: impl IntoIterator<Item = &'a str>) -> Self {
        let mut tokens = BTreeMap::new();
        for shard in shards {
            for i in 0..TOKENS_PER_SHARD {
                tokens.insert(hash(&format!("{shard}{i}")), shard.to_owned());
            }
        }
        Self { tokens }
    }

    /// The shard that `key` goes to; `None` when the ring has no shard.
    #[must_use]
    pub fn shard_for(&self, key: &str) -> Option<&str> {
        let h = hash(key);
        self.tokens
            .range(h..)
            .next()
            .or_else(|| self.tokens.iter().next())
            .map(|(_, shard)| shard.as_str())
    }

    /// Whether the ring has no shard.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

fn hash(text: &str) -> u64 {
    XxHash64::oneshot(0, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| format!("kubeward.dev/ConfigMapGenerator/ns-{}/gen-{i}", i % 7))
            .collect()
    }

    #[test]
    fn the_hash_is_xxh64_with_seed_zero_as_the_go_sharder_uses() {
        // XXH64's published test vectors for the empty input and "abc", seed 0.
        assert_eq!(hash(""), 0xef46_db37_51d8_e999);
        assert_eq!(hash("abc"), 0x44bc_2cf5_ad77_0999);
    }

    #[test]
    fn an_empty_ring_assigns_nothing() {
        assert_eq!(HashRing::new([]).shard_for("a"), None);
    }

    #[test]
    fn three_shards_each_get_a_third_of_the_keys_within_fifteen_percent() {
        let ring = HashRing::new(["shard-a", "shard-b", "shard-c"]);
        let keys = keys(3000);
        for shard in ["shard-a", "shard-b", "shard-c"] {
            let share = keys
                .iter()
                .filter(|k| ring.shard_for(k) == Some(shard))
                .count();
            assert!((850..=1150).contains(&share), "{shard} got {share} of 3000");
        }
    }

    #[test]
    fn adding_a_shard_moves_only_keys_to_it_and_removing_one_moves_only_its_own() {
        let keys = keys(3000);
        let three = HashRing::new(["a", "b", "c"]);
        let four = HashRing::new(["a", "b", "c", "d"]);
        let mut moved = 0;
        for key in &keys {
            let (before, after) = (three.shard_for(key), four.shard_for(key));
            if before != after {
                assert_eq!(after, Some("d"), "{key} moved between old shards");
                moved += 1;
            }
        }
        assert!((550..=950).contains(&moved), "{moved} of 3000 moved to d");

        let two = HashRing::new(["a", "c"]);
        for key in &keys {
            if three.shard_for(key) != Some("b") {
                assert_eq!(three.shard_for(key), two.shard_for(key), "{key} moved");
            }
        }
    }

    #[test]
    fn the_order_shards_are_given_in_does_not_matter() {
        let one = HashRing::new(["a", "b", "c"]);
        let other = HashRing::new(["c", "a", "b"]);
        assert_eq!(one, other);
    }
}
