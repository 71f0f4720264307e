//! Converts custom resources between the versions of their CRD for the API server's conversion
//! webhook.
//!
//! The model is controller-runtime's hub and spokes: one version (usually the storage version)
//! is the hub, every other version implements [`Convertible`] to and from it, and a
//! [`Converter`] converts between any two versions through the hub; a direct
//! [pair](converter::Builder::pair) can replace the hub for one direction. [`Converter::review`]
//! answers a [`ConversionReview`](kube::core::conversion::ConversionReview): every object is
//! converted to the desired version with its metadata as it was (only `apiVersion` changes,
//! and the labels and annotations a conversion writes), or the request fails with the first
//! object that could not be converted and why.
//!
//! `#[derive(Controller)]` with `#[controller(versions(...))]` declares the other versions of
//! a kind: the CRD then carries them and a conversion webhook, and `Kind::converter()` is the
//! converter that `Manager::add_conversion` (feature `webhooks`) serves
//! at `/convert` on the webhook server.

mod converter;
mod convertible;
mod error;
mod review;

pub use converter::{Builder, Converter};
pub use convertible::Convertible;
pub use error::Error;
#[cfg(feature = "webhooks")]
pub(crate) use review::answer_body;

#[cfg(test)]
mod tests;
