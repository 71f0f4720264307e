//! Converts the objects of one kind between its versions, through the hub or a declared pair.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Convertible, Error};

/// Converts the objects of one kind between its versions, as the API server asks a conversion
/// webhook to: controller-runtime's hub and spokes.
///
/// Every version but the hub implements [`Convertible`] to and from the hub; a conversion between
/// two spokes goes through the hub. A [pair](Builder::pair) declared directly takes precedence
/// over the hub for that direction. Cheap to clone.
///
/// ```
/// # use std::convert::Infallible;
/// # use kube::CustomResource;
/// # use schemars::JsonSchema;
/// # use serde::{Deserialize, Serialize};
/// use kubeward::conversion::{Converter, Convertible};
/// # mod v1alpha1 {
/// #   use super::*;
/// #   #[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
/// #   #[kube(group = "example.com", version = "v1alpha1", kind = "Widget", namespaced)]
/// #   pub struct WidgetSpec { pub size: u32 }
/// # }
/// # mod v1 {
/// #   use super::*;
/// #   #[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
/// #   #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
/// #   pub struct WidgetSpec { pub replicas: u32 }
/// # }
/// # impl Convertible<v1::Widget> for v1alpha1::Widget {
/// #     type Error = Infallible;
/// #     fn to_hub(self) -> Result<v1::Widget, Infallible> {
/// #         Ok(v1::Widget { metadata: self.metadata, spec: v1::WidgetSpec { replicas: self.spec.size } })
/// #     }
/// #     fn from_hub(hub: v1::Widget) -> Result<Self, Infallible> {
/// #         Ok(Self { metadata: hub.metadata, spec: v1alpha1::WidgetSpec { size: hub.spec.replicas } })
/// #     }
/// # }
///
/// # fn main() -> Result<(), kubeward::conversion::Error> {
/// let converter = Converter::with_hub::<v1::Widget>().spoke::<v1alpha1::Widget>().build();
/// let old = serde_json::json!({
///     "apiVersion": "example.com/v1alpha1", "kind": "Widget",
///     "metadata": { "name": "w", "namespace": "default", "uid": "1" },
///     "spec": { "size": 3 },
/// });
/// let new = converter.convert(old, "example.com/v1")?;
/// assert_eq!(new["spec"]["replicas"], 3);
/// assert_eq!(new["metadata"]["uid"], "1");
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Converter {
    versions: Arc<Versions>,
}

/// Declares a [`Converter`]'s spokes and pairs; from [`Converter::with_hub`].
#[must_use]
pub struct Builder<H> {
    versions: Versions,
    hub: PhantomData<fn() -> H>,
}

/// One conversion between two versions, over JSON.
type Step = Arc<dyn Fn(Value) -> Result<Value, Error> + Send + Sync>;

/// What a converter knows: the kind, its hub and the conversions, by version name (`v1`).
struct Versions {
    group: String,
    kind: String,
    /// The kind's CRD, `plural.group`.
    crd: String,
    hub: String,
    to_hub: BTreeMap<String, Step>,
    from_hub: BTreeMap<String, Step>,
    pairs: BTreeMap<(String, String), Step>,
}

impl Converter {
    /// Starts a converter whose hub version is `H`.
    pub fn with_hub<H: Resource<DynamicType = ()>>() -> Builder<H> {
        Builder {
            versions: Versions {
                group: H::group(&()).into_owned(),
                kind: H::kind(&()).into_owned(),
                crd: format!("{}.{}", H::plural(&()), H::group(&())),
                hub: H::version(&()).into_owned(),
                to_hub: BTreeMap::new(),
                from_hub: BTreeMap::new(),
                pairs: BTreeMap::new(),
            },
            hub: PhantomData,
        }
    }

    /// The API group of the kind converted.
    #[must_use]
    pub fn group(&self) -> &str {
        &self.versions.group
    }

    /// The kind converted.
    #[must_use]
    pub fn kind(&self) -> &str {
        &self.versions.kind
    }

    /// The name of the kind's CustomResourceDefinition (`widgets.example.com`), whose
    /// conversion webhook this converter serves.
    #[must_use]
    pub fn crd_name(&self) -> &str {
        &self.versions.crd
    }

    /// Converts `object` to `desired_api_version` (`group/version`): through the hub, or by a
    /// declared pair. The result keeps the object's `metadata` as it was, but for the labels and
    /// annotations the conversion wrote; an object already in the desired version is returned
    /// as it is.
    ///
    /// # Errors
    ///
    /// When the object is not an object of this converter's kind, no conversion is declared
    /// between its version and the one desired, or the conversion fails (see [`Error`]).
    pub fn convert(&self, object: Value, desired_api_version: &str) -> Result<Value, Error> {
        let v = &*self.versions;
        let to = v.version_of(desired_api_version)?;
        let (Some(api_version), Some(kind), Some(metadata)) = (
            object.get("apiVersion").and_then(Value::as_str),
            object.get("kind").and_then(Value::as_str),
            object.get("metadata").filter(|m| m.is_object()),
        ) else {
            return Err(Error::Malformed);
        };
        if kind != v.kind {
            return Err(v.wrong_kind(format!("{api_version} {kind}")));
        }
        let from = v.version_of(api_version)?.to_owned();
        if from == to {
            return Ok(object);
        }
        let metadata = metadata.clone();
        let mut converted = object;
        for step in v.steps(&from, to)? {
            converted = step(converted)?;
        }
        keep_metadata(metadata, &mut converted);
        Ok(converted)
    }
}

impl<H> Builder<H>
where
    H: Resource<DynamicType = ()> + Serialize + DeserializeOwned + 'static,
{
    /// Declares the spoke version `S`, converted to and from the hub by its [`Convertible`]
    /// implementation.
    ///
    /// # Panics
    ///
    /// When `S` is not a version of the hub's group and kind, or is the hub's version: a mistake
    /// in the declaration, found when the operator starts.
    pub fn spoke<S>(mut self) -> Self
    where
        S: Convertible<H> + Resource<DynamicType = ()> + Serialize + DeserializeOwned + 'static,
    {
        let version = self.versions.check::<S>();
        assert!(
            version != self.versions.hub,
            "{} is the hub version of {}; declare only the other versions as spokes",
            S::api_version(&()),
            self.versions.kind,
        );
        self.versions
            .to_hub
            .insert(version.clone(), step(S::to_hub));
        self.versions.from_hub.insert(version, step(S::from_hub));
        self
    }

    /// Declares a direct conversion from version `A` to version `B`, used instead of the hub for
    /// that direction (declare the other direction too when it needs one).
    ///
    /// # Panics
    ///
    /// When `A` or `B` is not a version of the hub's group and kind, as for
    /// [`spoke`](Self::spoke).
    pub fn pair<A, B, E>(mut self, convert: fn(A) -> Result<B, E>) -> Self
    where
        A: Resource<DynamicType = ()> + DeserializeOwned + 'static,
        B: Resource<DynamicType = ()> + Serialize + 'static,
        E: std::error::Error + Send + Sync + 'static,
    {
        let from = self.versions.check::<A>();
        let to = self.versions.check::<B>();
        self.versions.pairs.insert((from, to), step(convert));
        self
    }

    /// The converter.
    #[must_use]
    pub fn build(self) -> Converter {
        Converter {
            versions: Arc::new(self.versions),
        }
    }
}

impl Versions {
    /// The version name of `R`, which must be of this kind.
    fn check<R: Resource<DynamicType = ()>>(&self) -> String {
        assert!(
            R::group(&()) == self.group && R::kind(&()) == self.kind,
            "{} {} is not a version of {}/{}: a converter converts the versions of one kind",
            R::api_version(&()),
            R::kind(&()),
            self.group,
            self.kind,
        );
        R::version(&()).into_owned()
    }

    /// The version name in `api_version`, which must be of this group.
    fn version_of<'a>(&self, api_version: &'a str) -> Result<&'a str, Error> {
        match api_version.split_once('/') {
            Some((group, version)) if group == self.group && !version.is_empty() => Ok(version),
            _ => Err(self.wrong_kind(api_version.to_owned())),
        }
    }

    fn wrong_kind(&self, found: String) -> Error {
        Error::WrongKind {
            expected: format!("{}/{}", self.group, self.kind),
            found,
        }
    }

    /// The conversions from version `from` to version `to`: a declared pair, else through the hub.
    fn steps(&self, from: &str, to: &str) -> Result<Vec<&Step>, Error> {
        if let Some(pair) = self.pairs.get(&(from.to_owned(), to.to_owned())) {
            return Ok(vec![pair]);
        }
        let missing = || Error::NoConversion {
            from: format!("{}/{from}", self.group),
            to: format!("{}/{to}", self.group),
        };
        let mut steps = Vec::with_capacity(2);
        if from != self.hub {
            steps.push(self.to_hub.get(from).ok_or_else(missing)?);
        }
        if to != self.hub {
            steps.push(self.from_hub.get(to).ok_or_else(missing)?);
        }
        Ok(steps)
    }
}

/// A typed conversion as a step over JSON.
fn step<A, B, E>(convert: fn(A) -> Result<B, E>) -> Step
where
    A: Resource<DynamicType = ()> + DeserializeOwned + 'static,
    B: Resource<DynamicType = ()> + Serialize + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    let from = A::api_version(&()).into_owned();
    let to = B::api_version(&()).into_owned();
    Arc::new(move |object| {
        let typed: A = serde_json::from_value(object).map_err(|source| Error::Decode {
            api_version: from.clone(),
            source,
        })?;
        let converted = convert(typed).map_err(|source| Error::Convert {
            from: from.clone(),
            to: to.clone(),
            source: Box::new(source),
        })?;
        serde_json::to_value(converted).map_err(|source| Error::Encode {
            api_version: to.clone(),
            source,
        })
    })
}

/// Puts the original `metadata` back on `converted`, with the labels and annotations the
/// conversion wrote: the API server lets a conversion change those and nothing else of it.
fn keep_metadata(mut metadata: Value, converted: &mut Value) {
    if let (Some(original), Some(Value::Object(written))) =
        (metadata.as_object_mut(), converted.get_mut("metadata"))
    {
        for field in ["labels", "annotations"] {
            match written.remove(field) {
                Some(value) => original.insert(field.to_owned(), value),
                None => original.remove(field),
            };
        }
    }
    if let Some(object) = converted.as_object_mut() {
        object.insert("metadata".to_owned(), metadata);
    }
}

impl fmt::Debug for Converter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = &*self.versions;
        f.debug_struct("Converter")
            .field("group", &v.group)
            .field("kind", &v.kind)
            .field("hub", &v.hub)
            .field("spokes", &v.to_hub.keys().collect::<Vec<_>>())
            .field("pairs", &v.pairs.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl<H> fmt::Debug for Builder<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("hub", &self.versions.hub)
            .finish_non_exhaustive()
    }
}
