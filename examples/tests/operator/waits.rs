//! Waits on what an example operator reports: a condition of its status, an Event about it.

use std::fmt::Debug;
use std::time::Duration;

use kube::Api;
use kube::core::object::HasStatus;
use kubeward::reconcile::{Condition, Status};
use kubeward::testing::{ControlPlane, events_about, wait_for};
use serde::de::DeserializeOwned;

/// How long an operator gets to react.
pub(crate) const REACT: Duration = Duration::from_secs(30);

/// The object `name` once its condition `type_` satisfies `check`; on a timeout the error shows
/// its status.
pub(crate) async fn condition_of<K>(
    api: &Api<K>,
    name: &str,
    type_: &str,
    check: impl Fn(&Condition) -> bool,
) -> anyhow::Result<K>
where
    K: kube::Resource + HasStatus<Status = Status> + Clone + Debug + DeserializeOwned,
{
    let found = wait_for(REACT, &format!("its {type_} condition"), || async {
        let obj = api.get(name).await.ok()?;
        let condition = obj.status()?.conditions.find(type_)?;
        check(condition).then_some(obj)
    })
    .await;
    match found {
        Ok(obj) => Ok(obj),
        Err(e) => {
            let obj = api.get(name).await?;
            Err(anyhow::anyhow!("{e}; the status: {:?}", obj.status()))
        }
    }
}

/// Waits for an Event with `reason` about `obj` whose note contains `note`.
pub(crate) async fn event<K>(
    cp: &ControlPlane,
    obj: &K,
    reason: &str,
    note: &str,
) -> anyhow::Result<()>
where
    K: kube::Resource<DynamicType = ()>,
{
    let what = format!("a {reason} Event saying {note:?}");
    wait_for(REACT, &what, || async {
        let events = events_about(cp.client(), obj).await.ok()?;
        events
            .iter()
            .any(|e| {
                e.reason.as_deref() == Some(reason)
                    && e.note.as_deref().is_some_and(|n| n.contains(note))
            })
            .then_some(())
    })
    .await?;
    Ok(())
}
