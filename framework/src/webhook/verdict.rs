//! Defines what a validator or defaulter decides about an admission request.

/// A webhook's answer to one admission request: allowed or denied with a message, with warnings
/// either way (`kubectl` prints them).
///
/// ```
/// use kubeward::webhook::Verdict;
///
/// let ok = Verdict::allow().warn("spec.size above 100 is slow to start");
/// let no = Verdict::deny("spec.content is larger than 1 MiB");
/// assert!(ok.is_allowed() && !no.is_allowed());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[must_use]
pub struct Verdict {
    denial: Option<String>,
    warnings: Vec<String>,
}

impl Verdict {
    /// Admit the request.
    pub fn allow() -> Self {
        Self::default()
    }

    /// Refuse the request; the API server answers its client with `message`.
    pub fn deny(message: impl Into<String>) -> Self {
        Self {
            denial: Some(message.into()),
            warnings: Vec::new(),
        }
    }

    /// Adds a warning for the client (keep it under 120 characters).
    pub fn warn(mut self, warning: impl Into<String>) -> Self {
        self.warnings.push(warning.into());
        self
    }

    /// Whether the request is admitted.
    #[must_use]
    pub fn is_allowed(&self) -> bool {
        self.denial.is_none()
    }

    /// Why the request is refused, if it is.
    #[must_use]
    pub fn denial(&self) -> Option<&str> {
        self.denial.as_deref()
    }

    /// The warnings for the client.
    #[must_use]
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }
}

impl<E: std::fmt::Display> From<Result<(), E>> for Verdict {
    /// `Ok` admits; `Err` refuses with the error's message.
    fn from(result: Result<(), E>) -> Self {
        match result {
            Ok(()) => Self::allow(),
            Err(e) => Self::deny(e.to_string()),
        }
    }
}
