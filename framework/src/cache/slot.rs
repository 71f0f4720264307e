//! How the store holds one object: decoded, or as compact JSON with its resourceVersion.

use std::sync::Arc;

use kube::Resource;

/// One cached object.
pub(super) enum Slot<K> {
    /// Decoded, as every object of a default store.
    Decoded(Arc<K>),
    /// Serialized, as objects of a compact store.
    Encoded(Encoded),
}

/// An object's JSON and its resourceVersion in one allocation: one length byte, the
/// resourceVersion, then the JSON. The version stays readable so that a relist of an unchanged
/// object needs no decode.
pub(super) struct Encoded(Box<[u8]>);

impl<K: Resource> Slot<K> {
    /// The resourceVersion, without decoding.
    pub(super) fn resource_version(&self) -> Option<&str> {
        match self {
            Self::Decoded(obj) => obj.meta().resource_version.as_deref(),
            Self::Encoded(encoded) => encoded.resource_version(),
        }
    }
}

impl Encoded {
    /// Packs `json` with `resource_version`; a version longer than 255 bytes (never seen: they
    /// are decimal numbers) is left out, so the object then always counts as changed.
    pub(super) fn new(resource_version: Option<&str>, json: &[u8]) -> Self {
        let (len, version) = resource_version
            .and_then(|rv| Some((u8::try_from(rv.len()).ok()?, rv)))
            .unwrap_or((0, ""));
        let mut bytes = Vec::with_capacity(1 + version.len() + json.len());
        bytes.push(len);
        bytes.extend_from_slice(version.as_bytes());
        bytes.extend_from_slice(json);
        Self(bytes.into_boxed_slice())
    }

    /// The resourceVersion, if one was packed.
    pub(super) fn resource_version(&self) -> Option<&str> {
        let len = usize::from(*self.0.first()?);
        let version = std::str::from_utf8(self.0.get(1..=len)?).ok()?;
        (!version.is_empty()).then_some(version)
    }

    /// The object's JSON.
    pub(super) fn json(&self) -> &[u8] {
        let len = self.0.first().map_or(0, |len| usize::from(*len));
        self.0.get(1 + len..).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resource_version_and_the_json_come_back_as_packed() {
        let encoded = Encoded::new(Some("12345"), br#"{"a":1}"#);
        assert_eq!(encoded.resource_version(), Some("12345"));
        assert_eq!(encoded.json(), br#"{"a":1}"#);
        let without = Encoded::new(None, b"{}");
        assert_eq!(without.resource_version(), None);
        assert_eq!(without.json(), b"{}");
    }

    #[test]
    fn a_version_too_long_to_pack_is_left_out_and_the_json_stays_whole() {
        let long = "9".repeat(300);
        let encoded = Encoded::new(Some(&long), b"[1]");
        assert_eq!(encoded.resource_version(), None);
        assert_eq!(encoded.json(), b"[1]");
    }
}
