//! Waits until a store has caught up with a write: a read fenced behind the writer's own writes.
//!
//! A controller that wrote an object knows the resourceVersion the API server gave the new
//! state (or, for a delete, the uid of what is gone). Its informer brings that state into the
//! store a little later; a read in between would see the object as it was. A [`Fence`] names
//! what the store must have seen, and `Store::wait_for` waits for it, woken by the store's
//! own changes (no polling), for at most a timeout.
//!
//! resourceVersions are compared as integers where both parse, as client-go's staleness
//! mitigation does (see `resource_version`); one that does not parse never makes a read wait.

use super::ObjectKey;

/// What a store must have seen before a read of it reflects a write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Fence {
    /// The object `key` at `version` or newer, or anything newer in its namespace (it may have
    /// changed or gone since).
    Version {
        /// The object written.
        key: ObjectKey,
        /// The resourceVersion the write returned.
        version: String,
    },
    /// No object `key` with this `uid`: the delete has been seen.
    Gone {
        /// The object deleted.
        key: ObjectKey,
        /// Its uid.
        uid: String,
    },
    /// Every change in `namespace` (`None`: cluster-scoped objects) up to `version`.
    Namespace {
        /// The namespace written in.
        namespace: Option<String>,
        /// The newest resourceVersion written there.
        version: String,
    },
}

/// How a wait for a fence ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Waited {
    /// The store had already passed every fence: no wait.
    No,
    /// The store passed every fence after waiting.
    CaughtUp,
    /// The timeout came first; the read goes ahead on the store as it is.
    TimedOut,
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    use super::*;
    use crate::cache::store;

    fn cm(namespace: &str, name: &str, uid: &str, version: &str) -> Arc<ConfigMap> {
        Arc::new(ConfigMap {
            metadata: ObjectMeta {
                namespace: Some(namespace.into()),
                name: Some(name.into()),
                uid: Some(uid.into()),
                resource_version: Some(version.into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        })
    }

    fn version(name: &str, version: &str) -> Fence {
        Fence::Version {
            key: ObjectKey::new(Some("ns"), name),
            version: version.into(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_read_waits_until_the_store_applies_the_written_version() {
        let (store, writer) = store::<ConfigMap>();
        writer.apply(cm("ns", "a", "u", "9"));
        let fence = [version("a", "10")];
        let waiting = tokio::spawn({
            let store = store.clone();
            async move { store.wait_for(&fence, Duration::from_secs(5)).await }
        });
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert!(!waiting.is_finished(), "the read went ahead on version 9");
        writer.apply(cm("ns", "a", "u", "10"));
        assert_eq!(waiting.await.ok(), Some(Waited::CaughtUp));
    }

    #[tokio::test(start_paused = true)]
    async fn a_store_that_passed_the_version_elsewhere_in_the_namespace_does_not_wait() {
        let (store, writer) = store::<ConfigMap>();
        // Written at 10, then changed by someone else at 11: the store only ever sees 11,
        // or another object's change at 12.
        writer.apply(cm("ns", "b", "u2", "12"));
        assert_eq!(
            store.wait_for(&[version("a", "10")], Duration::ZERO).await,
            Waited::No
        );
        let other_namespace = Fence::Version {
            key: ObjectKey::new(Some("other"), "a"),
            version: "10".into(),
        };
        let started = tokio::time::Instant::now();
        assert_eq!(
            store
                .wait_for(&[other_namespace], Duration::from_secs(3))
                .await,
            Waited::TimedOut,
            "another namespace's watch says nothing of this one"
        );
        assert_eq!(started.elapsed(), Duration::from_secs(3));
    }

    #[tokio::test(start_paused = true)]
    async fn a_delete_fence_waits_until_that_uid_is_gone_not_its_name() {
        let (store, writer) = store::<ConfigMap>();
        writer.apply(cm("ns", "a", "old", "5"));
        let gone = [Fence::Gone {
            key: ObjectKey::new(Some("ns"), "a"),
            uid: "old".into(),
        }];
        assert_eq!(
            store.wait_for(&gone, Duration::from_secs(1)).await,
            Waited::TimedOut
        );
        writer.delete(cm("ns", "a", "old", "6"));
        writer.apply(cm("ns", "a", "new", "7"));
        assert_eq!(
            store.wait_for(&gone, Duration::from_secs(1)).await,
            Waited::No
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_relist_passes_its_versions_only_when_it_finishes() {
        let (store, writer) = store::<ConfigMap>();
        let namespace = [Fence::Namespace {
            namespace: Some("ns".into()),
            version: "20".into(),
        }];
        let mut relist = writer.relist();
        relist.apply(cm("ns", "b", "u2", "30"));
        assert!(
            !store.passed(&namespace[0]),
            "a page is no promise that older objects of the list are in"
        );
        relist.apply(cm("ns", "a", "u1", "20"));
        let _ = relist.finish();
        assert_eq!(store.wait_for(&namespace, Duration::ZERO).await, Waited::No);
        assert_eq!(
            store.newest_resource_version(Some("ns")).as_deref(),
            Some("30")
        );
    }
}
