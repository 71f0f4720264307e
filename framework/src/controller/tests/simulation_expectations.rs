//! Expectations under simulation: a reconciler that finds its copies in the cache's store
//! itself (a read no fence covers) makes no duplicate `generateName` create with expectations
//! on, and duplicates with them off.
//!
//! The world, its faults and its count are `simulation_fencing`'s: late watch events (up to 500 ms each), slow requests,
//! broken watches, and no failed writes (a create whose answer is lost cannot be expected).

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, ResourceExt as _};

use super::simulation_fencing::copies_over;
use crate::controller::{Action, Context, Reconciler};

/// Creates a copy of each source with `generateName` when the cache's store (read directly,
/// unfenced) holds none.
struct StoreCopier;

impl Reconciler<ConfigMap> for StoreCopier {
    type Error = kube::Error;

    async fn reconcile(
        &self,
        source: Arc<ConfigMap>,
        ctx: &Context<ConfigMap>,
    ) -> kube::Result<Action> {
        if source.labels().get("role").map(String::as_str) != Some("source") {
            return Ok(Action::await_change());
        }
        let name = source.name_any();
        let copied = ctx
            .store()
            .list()
            .iter()
            .any(|cm| cm.labels().get("copy-of") == Some(&name));
        if !copied {
            let copy = ConfigMap {
                metadata: ObjectMeta {
                    generate_name: Some(format!("{name}-")),
                    labels: Some([("copy-of".to_owned(), name)].into()),
                    ..ObjectMeta::default()
                },
                ..ConfigMap::default()
            };
            let api: Api<ConfigMap> = Api::namespaced(ctx.client(), "ns");
            api.create(&PostParams::default(), &copy).await?;
        }
        Ok(Action::await_change())
    }
}

#[test]
fn expectations_make_no_duplicate_generate_name_create_where_a_store_read_without_them_does() {
    let without = copies_over(0..40, false, || StoreCopier).duplicates;
    eprintln!("without expectations: {without} duplicates over seeds 0..40");
    assert!(
        without > 0,
        "late watches made no duplicate without expectations in 40 seeds: the test proves nothing"
    );
    let with = copies_over(0..200, true, || StoreCopier).duplicates;
    eprintln!("with expectations: {with} duplicates over seeds 0..200");
    assert_eq!(
        with, 0,
        "a reconcile acted before the cache showed its own create"
    );
}
