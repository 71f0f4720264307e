//! The example operator's generator controller as the plan tests run it, under the name
//! `plan-generator`: `plan_generator --watch-namespaces NS plan [-l SELECTOR] [-o json]`.

use k8s_openapi::api::core::v1::ConfigMap;
use kubeward::cli::Operator;
use kubeward::controller::Controller;
use kubeward_examples::by_hand::FINALIZER;
use kubeward_examples::configmap_generator::Generator;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let operator = Operator::from_args("Generates ConfigMaps (plan tests)").await?;
    operator.add(
        Controller::with_finalizer(Generator, FINALIZER)
            .name("plan-generator")
            .owns::<ConfigMap>(),
    )?;
    Ok(operator.run().await?)
}
