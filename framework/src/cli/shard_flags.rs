//! The flags of a run as one shard of a controller ring (`--shard-*`; feature `sharding`).

use clap::Args;

use crate::manager::Error;
use crate::shard::Shard;
use crate::{leader, names};

/// Which ring this replica is a shard of, and its id, from `--shard-*` flags; part of
/// [`Flags`](super::Flags).
#[derive(Clone, Debug, Args)]
#[non_exhaustive]
pub struct ShardFlags {
    /// Run as a shard of this controller ring: the ring's controllers reconcile only the objects
    /// the sharder assigns to this replica; unsharded when unset.
    #[arg(long = "shard-ring", env = "KUBEWARD_SHARD_RING")]
    pub ring: Option<String>,

    /// This replica's shard id, unique in its ring; defaults to the pod name (`POD_NAME`, else
    /// `HOSTNAME`).
    #[arg(long = "shard-id", env = "KUBEWARD_SHARD_ID")]
    pub id: Option<String>,
}

impl ShardFlags {
    /// The shard these flags describe, its Lease in `namespace` (the pod's when `None`) with the
    /// leader-election timings `timing`.
    pub(super) fn shard(
        &self,
        namespace: Option<String>,
        timing: &leader::Config,
    ) -> Result<Option<Shard>, Error> {
        let Some(ring) = &self.ring else {
            if self.id.is_some() {
                return Err(Error::InvalidFlags(
                    "--shard-id: a shard id needs its ring (--shard-ring)".into(),
                ));
            }
            return Ok(None);
        };
        let id = match &self.id {
            Some(id) => id.clone(),
            None => std::env::var("POD_NAME")
                .or_else(|_| std::env::var("HOSTNAME"))
                .unwrap_or_default(),
        };
        if let Err(why) = names::short_dns_subdomain(ring).and(names::short_dns_subdomain(&id)) {
            return Err(Error::InvalidFlags(format!(
                "--shard-ring {ring:?} / --shard-id {id:?}: each names a Lease and a label value: \
                 {why}; the shard id defaults to the pod name (POD_NAME, else HOSTNAME)"
            )));
        }
        Ok(Some(
            Shard::new(ring, id)
                .namespace(namespace)
                .lease(timing.clone()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use crate::cli::Flags;

    fn shard(args: &[&str]) -> Result<Option<crate::shard::Shard>, crate::manager::Error> {
        Flags::try_parse_from([&["operator"], args].concat())
            .expect("the flags parse")
            .shard()
    }

    #[test]
    fn a_shard_takes_its_ring_and_id_from_the_flags() {
        let sharded = shard(&["--shard-ring", "widgets", "--shard-id", "widgets-0"]).unwrap();
        let one = sharded.expect("a shard");
        assert_eq!(
            (one.ring.as_str(), one.id.as_str()),
            ("widgets", "widgets-0")
        );
        assert!(shard(&[]).unwrap().is_none());
    }

    #[test]
    fn a_oneid_without_its_ring_or_a_ring_that_cannot_name_a_lease_is_refused() {
        let alone = shard(&["--shard-id", "widgets-0"]).unwrap_err().to_string();
        assert!(alone.contains("needs its ring (--shard-ring)"), "{alone}");
        let bad = shard(&["--shard-ring", "Widgets_", "--shard-id", "w-0"])
            .unwrap_err()
            .to_string();
        assert!(bad.contains("--shard-ring \"Widgets_\""), "{bad}");
    }
}
