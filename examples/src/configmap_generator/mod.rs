//! The example operator: a `ConfigMapGenerator` custom resource produces a ConfigMap.
//!
//! Its reconciler server-side-applies the owned ConfigMap, records the outcome in status
//! conditions, emits Events, and deletes the ConfigMap through a finalizer when the generator is
//! deleted.

mod crd;
mod reconciler;

pub use crd::{Condition, ConfigMapGenerator, ConfigMapGeneratorSpec, ConfigMapGeneratorStatus};
pub use reconciler::{
    DELAY_ANNOTATION, FINALIZER, Generator, MANAGER, controller_without_macro, generated_name,
};
