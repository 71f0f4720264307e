//! The admission webhooks of `@@kind@@`: the API server calls them before it stores an object.
//! `cargo run -- manifests` writes their configurations into the chart.

use kube::core::admission::AdmissionRequest;
use kubeward::webhook::{@@traits@@, Verdict};

use crate::api::@@module@@::@@kind@@;
