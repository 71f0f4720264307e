//! Declares how one version of a kind converts to and from its hub version.

/// A version of a kind that converts to and from the hub version `Hub`: controller-runtime's
/// `Convertible`, with the hub as a type parameter.
///
/// Implement it for every version but the hub (the spokes); a [`Converter`](super::Converter)
/// then converts between any two versions through the hub, so `n` versions need `n - 1`
/// implementations, not `n²`. Both functions take and return whole objects; the framework keeps
/// each object's metadata as the API server sent it (labels and annotations excepted, which a
/// conversion may change, as the API server allows), so copying `metadata` across is all a
/// conversion does with it.
///
/// A version that cannot hold a field of the hub keeps it somewhere it can, usually an
/// annotation, so that hub → spoke → hub loses nothing: the API server reads and writes objects
/// in any served version, and a lossy conversion silently deletes data.
///
/// ```
/// # use std::convert::Infallible;
/// # use kube::CustomResource;
/// # use schemars::JsonSchema;
/// # use serde::{Deserialize, Serialize};
/// use kubeward::conversion::Convertible;
///
/// mod v1alpha1 {
/// #   use super::*;
///     #[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
///     #[kube(group = "example.com", version = "v1alpha1", kind = "Widget", namespaced)]
///     pub struct WidgetSpec { pub size: u32 }
/// }
///
/// mod v1 {
/// #   use super::*;
///     #[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
///     #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
///     pub struct WidgetSpec { pub replicas: u32 }
/// }
///
/// impl Convertible<v1::Widget> for v1alpha1::Widget {
///     type Error = Infallible;
///
///     fn to_hub(self) -> Result<v1::Widget, Infallible> {
///         let spec = v1::WidgetSpec { replicas: self.spec.size };
///         Ok(v1::Widget { metadata: self.metadata, spec })
///     }
///
///     fn from_hub(hub: v1::Widget) -> Result<Self, Infallible> {
///         let spec = v1alpha1::WidgetSpec { size: hub.spec.replicas };
///         Ok(v1alpha1::Widget { metadata: hub.metadata, spec })
///     }
/// }
///
/// fn main() {
///     let old = v1alpha1::Widget::new("w", v1alpha1::WidgetSpec { size: 3 });
///     assert_eq!(old.to_hub().map(|new| new.spec.replicas), Ok(3));
/// }
/// ```
#[doc(alias = "Hub")]
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not convert to and from the hub version `{Hub}`",
    label = "a version the hub converts to and from",
    note = "implement `kubeward::conversion::Convertible<{Hub}>` for `{Self}`: its `to_hub` and `from_hub` convert between the two versions"
)]
pub trait Convertible<Hub>: Sized {
    /// Why an object cannot be converted: [`Infallible`](std::convert::Infallible) when it always
    /// can, [`kubeward::Error`](crate::Error) for any message.
    type Error: std::error::Error + Send + Sync + 'static;

    /// This version's object as the hub version.
    ///
    /// # Errors
    ///
    /// When the object cannot be expressed in the hub version; the API server then fails the
    /// request that needed the conversion, with the error's message.
    fn to_hub(self) -> Result<Hub, Self::Error>;

    /// The hub version's object as this version.
    ///
    /// # Errors
    ///
    /// When the object cannot be expressed in this version, as for [`to_hub`](Self::to_hub).
    fn from_hub(hub: Hub) -> Result<Self, Self::Error>;
}
