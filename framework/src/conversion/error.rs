//! Says why an object could not be converted.

/// Why an object could not be converted; the [review](super::Converter::review) reports it to the
/// API server with the object it is about.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The object is not a JSON object with a string `apiVersion` and `kind` and an object
    /// `metadata`.
    #[error("not an object with apiVersion, kind and metadata")]
    Malformed,
    /// The object, or the version asked for, is of another group or kind than the converter's.
    #[error("{found} is not of the converter's kind {expected}")]
    WrongKind {
        /// The converter's `group/Kind`.
        expected: String,
        /// The object's or the desired `apiVersion` and `kind`.
        found: String,
    },
    /// No conversion is declared between the two versions.
    #[error("no conversion from {from} to {to} is declared")]
    NoConversion {
        /// The object's version.
        from: String,
        /// The version asked for.
        to: String,
    },
    /// The object does not decode as its version's type.
    #[error("the object does not decode as {api_version}")]
    Decode {
        /// The version it was decoded as.
        api_version: String,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },
    /// A conversion function returned an error.
    #[error("the conversion from {from} to {to} failed")]
    Convert {
        /// The version converted from.
        from: String,
        /// The version converted to.
        to: String,
        /// The conversion's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// The converted object does not encode as JSON.
    #[error("the converted object does not encode as {api_version}")]
    Encode {
        /// The version it was encoded as.
        api_version: String,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },
}

/// `error` and its sources, joined by `: `, for a message the API server shows to users.
pub(crate) use crate::error::chain;
