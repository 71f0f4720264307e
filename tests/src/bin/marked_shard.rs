//! The example operator's controller, instrumented to catch two shards reconciling one object:
//! while a reconcile of a generator runs, a marker file named after it exists in a folder all
//! shard processes share.
//!
//! `KUBEWARD_MARKERS=DIR KUBEWARD_SHARD_ID=ID marked_shard --shard-ring configmap-generator
//! [FLAGS]` runs as the example operator does. A reconcile creates `DIR/markers/NS.NAME` with
//! `create_new` and removes it when done; when the file is already there, another process is
//! reconciling the generator, and the reconcile records the violation as a file in
//! `DIR/violations` (and a log line) before it goes on. The example operator's own binary links
//! none of this.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt as _;
use kubeward::Error;
use kubeward::cli::Operator;
use kubeward::controller::{Action, Cleanup, Context, Controller, Predicate, Reconciler};
use kubeward_examples::by_hand::FINALIZER;
use kubeward_examples::configmap_generator::{ConfigMapGenerator, Generator};

/// The example's reconciler behind a per-generator marker file.
struct Marked {
    shard: String,
    dir: PathBuf,
}

/// Removes the marker when the reconcile ends, however it ends.
struct Marker(Option<PathBuf>);

impl Drop for Marker {
    fn drop(&mut self) {
        if let Some(path) = self.0.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Marked {
    /// Marks `cmg` as being reconciled here, or records that another shard is at it.
    fn mark(&self, cmg: &ConfigMapGenerator) -> Marker {
        let name = format!("{}.{}", cmg.namespace().unwrap_or_default(), cmg.name_any());
        let path = self.dir.join("markers").join(&name);
        match std::fs::File::create_new(&path) {
            Ok(_) => Marker(Some(path)),
            Err(error) => {
                let holder = std::fs::read_to_string(&path).unwrap_or_default();
                tracing::error!(generator = %name, %error, "VIOLATION: reconciled while another shard reconciles it");
                let record = self.dir.join("violations").join(format!(
                    "{name}.{}.{}",
                    self.shard,
                    std::process::id()
                ));
                let _ =
                    std::fs::write(record, format!("{name} by {} while {holder}\n", self.shard));
                Marker(None)
            }
        }
    }
}

impl Reconciler<ConfigMapGenerator> for Marked {
    type Error = Error;

    async fn reconcile(
        &self,
        cmg: Arc<ConfigMapGenerator>,
        ctx: &Context<ConfigMapGenerator>,
    ) -> Result<Action, Error> {
        let marker = self.mark(&cmg);
        if let Some(path) = &marker.0 {
            let _ = std::fs::write(path, &self.shard);
        }
        let done = Generator.reconcile(cmg, ctx).await;
        drop(marker);
        done
    }
}

impl Cleanup<ConfigMapGenerator> for Marked {
    async fn cleanup(
        &self,
        cmg: Arc<ConfigMapGenerator>,
        ctx: &Context<ConfigMapGenerator>,
    ) -> Result<(), Error> {
        let _marker = self.mark(&cmg);
        Generator.cleanup(cmg, ctx).await
    }
}

/// `DIR/markers` and `DIR/violations`, made if missing.
fn prepare(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir.join("markers"))?;
    std::fs::create_dir_all(dir.join("violations"))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let dir =
        PathBuf::from(std::env::var_os("KUBEWARD_MARKERS").ok_or_else(|| {
            anyhow::anyhow!("KUBEWARD_MARKERS must name the shared marker folder")
        })?);
    prepare(&dir)?;
    let shard = std::env::var("KUBEWARD_SHARD_ID").unwrap_or_default();
    let manager = Operator::from_args("Marks the objects it reconciles (sharding tests)").await?;
    let controller = Controller::with_finalizer(Marked { shard, dir }, FINALIZER)
        .name("configmap-generator")
        .owns::<ConfigMap>()
        .predicate(Predicate::generation_changed());
    manager.add(controller)?;
    Ok(manager.run().await?)
}
