//! Labels the objects a shard applies for an owner with the owner's shard.
//!
//! The sharder puts an owned object on its controller owner's shard, and the owner a shard
//! reconciles is on that shard: so a shard that writes an owned object of the ring sets the
//! label itself, and the object is in the shard's cache from its first version on.

use std::collections::BTreeSet;

use kube::Resource;
use kube::core::ObjectMeta;

use super::shard_label;

/// The shard label of a ring and the kinds (`group/Kind`) the ring's controller owns.
#[derive(Debug)]
pub(crate) struct OwnedLabels {
    label: String,
    kinds: BTreeSet<String>,
}

impl OwnedLabels {
    /// For the shards of `ring`, whose controller owns `kinds` (`group/Kind`).
    pub(crate) fn new(ring: &str, kinds: impl IntoIterator<Item = String>) -> Self {
        Self {
            label: shard_label(ring),
            kinds: kinds.into_iter().collect(),
        }
    }

    /// Whether `C` is a kind of the ring that the controller owns: the sharder moves its
    /// objects with their owners, each in a write of its own.
    pub(crate) fn covers<C: Resource<DynamicType = ()>>(&self) -> bool {
        self.kinds
            .contains(&format!("{}/{}", C::group(&()), C::kind(&())))
    }

    /// Sets the shard label of `child`, an object of `C` that `owner` controls, to the owner's
    /// when `C` is a kind of the ring and the owner has one.
    pub(crate) fn label<C: Resource<DynamicType = ()>>(
        &self,
        owner: &ObjectMeta,
        child: &mut ObjectMeta,
    ) {
        if !self.covers::<C>() {
            return;
        }
        let Some(shard) = owner.labels.as_ref().and_then(|l| l.get(&self.label)) else {
            return;
        };
        child
            .labels
            .get_or_insert_with(Default::default)
            .insert(self.label.clone(), shard.clone());
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ConfigMap, Secret};

    use super::*;

    #[test]
    fn an_owned_object_of_the_ring_gets_its_owners_shard_and_others_are_left_alone() {
        let labels = OwnedLabels::new("gen", ["/ConfigMap".to_owned()]);
        let owner = ObjectMeta {
            labels: Some([(shard_label("gen"), "shard-b".to_owned())].into()),
            ..ObjectMeta::default()
        };
        let mut child = ObjectMeta::default();
        labels.label::<ConfigMap>(&owner, &mut child);
        assert_eq!(
            child
                .labels
                .unwrap()
                .get(&shard_label("gen"))
                .map(String::as_str),
            Some("shard-b")
        );

        let mut secret = ObjectMeta::default();
        labels.label::<Secret>(&owner, &mut secret);
        assert_eq!(secret.labels, None, "a Secret is not a kind of the ring");
        let mut unassigned = ObjectMeta::default();
        labels.label::<ConfigMap>(&ObjectMeta::default(), &mut unassigned);
        assert_eq!(
            unassigned.labels, None,
            "an owner without a shard gives none"
        );
    }
}
