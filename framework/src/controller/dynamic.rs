//! Builds controllers over kinds known only at run time, such as a `DynamicObject` kind found by
//! discovery.

use kube::discovery::Scope;
use serde::Serialize;

use super::builder::check_finalizer;
use super::erased::{erase, erase_finalized};
use super::{Cacheable, Cleanup, Controller, Kind, Reconciler};

impl<K: Cacheable + Serialize> Controller<K> {
    /// A controller that calls `reconciler` for objects of the kind `dyntype` describes, with
    /// `scope`: for `K = DynamicObject` an `ApiResource`, usually found by discovery with the
    /// scope from its capabilities (kube-runtime's `Controller::new_with`, controller-runtime's
    /// unstructured controllers). It runs like any other controller; the reconciler reads the
    /// kind's `ApiResource` from [`Context::resource`](super::Context::resource). For a kind known
    /// at compile time, use [`Controller::new`].
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// use kube::api::{DynamicObject, GroupVersionKind};
    /// use kube::discovery;
    /// use kubeward::controller::{Action, Context, Controller, Reconciler};
    ///
    /// struct Audit;
    ///
    /// impl Reconciler<DynamicObject> for Audit {
    ///     type Error = kube::Error;
    ///
    ///     async fn reconcile(&self, obj: Arc<DynamicObject>, ctx: &Context<DynamicObject>) -> Result<Action, kube::Error> {
    ///         tracing::info!(kind = ctx.resource().kind, name = ?obj.metadata.name, "seen");
    ///         Ok(Action::await_change())
    ///     }
    /// }
    ///
    /// # #[tokio::main]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let client = kube::Client::try_default().await?;
    /// let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    /// let (resource, capabilities) = discovery::pinned_kind(&client, &gvk).await?;
    /// let controller = Controller::dynamic(Audit, &resource, &capabilities.scope);
    /// # let _ = controller;
    /// # Ok(()) }
    /// ```
    pub fn dynamic(
        reconciler: impl Reconciler<K>,
        dyntype: &K::DynamicType,
        scope: &Scope,
    ) -> Self {
        Self::assemble(Kind::erase::<K>(dyntype, scope), erase(reconciler), None)
    }

    /// As [`dynamic`](Self::dynamic), behind the finalizer `finalizer`, as
    /// [`Controller::with_finalizer`] does for a kind known at compile time.
    ///
    /// # Errors
    /// If `finalizer` is not a qualified name with a domain, the controller keeps
    /// [`Invalid::Finalizer`](super::Invalid::Finalizer), which
    /// [`check`](Self::check) and [`bind`](Self::bind) return.
    pub fn dynamic_with_finalizer(
        reconciler: impl Cleanup<K>,
        finalizer: impl Into<String>,
        dyntype: &K::DynamicType,
        scope: &Scope,
    ) -> Self {
        let finalizer = finalizer.into();
        let checked = check_finalizer("dynamic_with_finalizer", &finalizer);
        Self::assemble(
            Kind::erase::<K>(dyntype, scope),
            erase_finalized(reconciler, finalizer.clone()),
            Some(finalizer),
        )
        .keep_first(checked)
    }
}
