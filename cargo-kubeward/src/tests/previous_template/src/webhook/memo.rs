//! The admission webhooks of `Memo`: the API server calls them before it stores an object.
//! `cargo run -- manifests` writes their configurations into the chart.

use kube::core::admission::AdmissionRequest;
use kubeward::webhook::{Defaulter, Validator, Verdict};

use crate::api::memo::Memo;

/// Refuses `Memo`s that the operator could not reconcile.
#[derive(Clone, Copy, Debug, Default)]
pub struct MemoValidator;

impl Validator<Memo> for MemoValidator {
    async fn validate_create(&self, object: &Memo, _: &AdmissionRequest<Memo>) -> Verdict {
        check(object)
    }

    async fn validate_update(
        &self,
        _old: &Memo,
        object: &Memo,
        _: &AdmissionRequest<Memo>,
    ) -> Verdict {
        check(object)
    }
}

/// Whether `object` is valid: denies an empty `content`. Replace with your rules.
pub fn check(object: &Memo) -> Verdict {
    if object.spec.content.is_empty() {
        return Verdict::deny("spec.content is empty");
    }
    Verdict::allow()
}

/// Fills in what a `Memo` leaves out.
#[derive(Clone, Copy, Debug, Default)]
pub struct MemoDefaulter;

impl Defaulter<Memo> for MemoDefaulter {
    async fn default(&self, object: &mut Memo, _: &AdmissionRequest<Memo>) -> Verdict {
        fill_in(object);
        Verdict::allow()
    }
}

/// Sets the defaults of `object`: an empty `content` becomes `"(empty)"`. Replace with yours.
pub fn fill_in(object: &mut Memo) {
    if object.spec.content.is_empty() {
        "(empty)".clone_into(&mut object.spec.content);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::memo::MemoSpec;

    fn object(content: &str) -> Memo {
        let spec = MemoSpec {
            content: content.to_owned(),
        };
        Memo::new("test", spec)
    }

    #[test]
    fn an_empty_content_is_denied() {
        assert_eq!(check(&object("")).denial(), Some("spec.content is empty"));
        assert!(check(&object("hello")).is_allowed());
    }

    #[test]
    fn an_empty_content_is_filled_in() {
        let mut empty = object("");
        fill_in(&mut empty);
        assert_eq!(empty.spec.content, "(empty)");
        let mut set = object("hello");
        fill_in(&mut set);
        assert_eq!(set.spec.content, "hello");
    }
}
