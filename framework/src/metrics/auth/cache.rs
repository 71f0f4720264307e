//! Remembers recent access decisions per token for a few seconds, in bounded memory.

use std::collections::HashMap;

use tokio::time::{Duration, Instant};

use super::decision::Decision;

/// The SHA-256 of a bearer token: decisions are filed under it, so no token is kept.
pub(crate) type TokenDigest = [u8; 32];

/// The digest a token's decision is filed under.
pub(crate) fn digest(token: &str) -> TokenDigest {
    let hash = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
    let mut digest = [0; 32];
    digest.copy_from_slice(hash.as_ref());
    digest
}

/// Recent decisions by token digest: an allowed one for `allowed_for`, a refused one (401, 403)
/// for `refused_for`; an unavailable API server is never remembered. Holds at most `capacity`
/// entries: when full, expired entries go first, then the one closest to expiring.
#[derive(Debug)]
pub(crate) struct Decisions {
    entries: HashMap<TokenDigest, (Decision, Instant)>,
    allowed_for: Duration,
    refused_for: Duration,
    capacity: usize,
}

impl Decisions {
    pub(crate) fn new(allowed_for: Duration, refused_for: Duration, capacity: usize) -> Self {
        Self {
            entries: HashMap::new(),
            allowed_for,
            refused_for,
            capacity,
        }
    }

    /// The decision for `token` if one was made recently enough.
    pub(crate) fn get(&mut self, token: &TokenDigest, now: Instant) -> Option<Decision> {
        let (decision, until) = self.entries.get(token)?;
        if *until > now {
            return Some(decision.clone());
        }
        self.entries.remove(token);
        None
    }

    /// Files `decision` for `token`, unless it is not to be remembered.
    pub(crate) fn insert(&mut self, token: TokenDigest, decision: Decision, now: Instant) {
        let ttl = match decision {
            Decision::Allowed => self.allowed_for,
            Decision::Unauthenticated(_) | Decision::Forbidden { .. } => self.refused_for,
            Decision::Unavailable(_) => return,
        };
        if self.capacity == 0 || ttl.is_zero() {
            return;
        }
        if !self.entries.contains_key(&token) && self.entries.len() >= self.capacity {
            self.entries.retain(|_, (_, until)| *until > now);
            if self.entries.len() >= self.capacity {
                let soonest = self
                    .entries
                    .iter()
                    .min_by_key(|(_, (_, until))| *until)
                    .map(|(key, _)| *key);
                if let Some(key) = soonest {
                    self.entries.remove(&key);
                }
            }
        }
        self.entries.insert(token, (decision, now + ttl));
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forbidden() -> Decision {
        Decision::Forbidden {
            user: "u".into(),
            reason: String::new(),
        }
    }

    fn decisions(capacity: usize) -> Decisions {
        Decisions::new(Duration::from_secs(10), Duration::from_secs(2), capacity)
    }

    #[test]
    fn an_allowed_decision_lasts_longer_than_a_refused_one() {
        let now = Instant::now();
        let mut cache = decisions(8);
        cache.insert(digest("reader"), Decision::Allowed, now);
        cache.insert(digest("stranger"), forbidden(), now);
        let later = now + Duration::from_secs(2);
        assert_eq!(cache.get(&digest("stranger"), later), None);
        assert_eq!(cache.get(&digest("reader"), later), Some(Decision::Allowed));
        let much_later = now + Duration::from_secs(10);
        assert_eq!(cache.get(&digest("reader"), much_later), None);
        assert_eq!(cache.len(), 0, "expired entries are dropped when read");
    }

    #[test]
    fn an_unavailable_api_server_is_never_remembered() {
        let now = Instant::now();
        let mut cache = decisions(8);
        cache.insert(digest("t"), Decision::Unavailable("down".into()), now);
        assert_eq!(cache.get(&digest("t"), now), None);
    }

    #[test]
    fn a_full_cache_drops_expired_entries_then_the_one_expiring_first() {
        let now = Instant::now();
        let mut cache = decisions(2);
        cache.insert(digest("refused"), forbidden(), now);
        cache.insert(digest("allowed"), Decision::Allowed, now);
        // Full: the refused entry expires first, so it makes room.
        cache.insert(
            digest("new"),
            Decision::Allowed,
            now + Duration::from_secs(1),
        );
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.get(&digest("refused"), now), None);
        assert_eq!(cache.get(&digest("allowed"), now), Some(Decision::Allowed));
        // Once both expired, a new entry clears them out.
        let later = now + Duration::from_secs(20);
        cache.insert(digest("newest"), forbidden(), later);
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.get(&digest("newest"), later), Some(forbidden()));
    }

    #[test]
    fn tokens_are_filed_by_digest_and_different_tokens_differ() {
        assert_ne!(digest("a"), digest("b"));
        assert_eq!(digest("a"), digest("a"));
        let mut cache = decisions(8);
        let now = Instant::now();
        cache.insert(digest("a"), Decision::Allowed, now);
        assert_eq!(cache.get(&digest("b"), now), None);
    }
}
