
/// Refuses `@@kind@@`s that the operator could not reconcile.
#[derive(Clone, Copy, Debug, Default)]
pub struct @@kind@@Validator;

impl Validator<@@kind@@> for @@kind@@Validator {
    async fn validate_create(&self, object: &@@kind@@, _: &AdmissionRequest<@@kind@@>) -> Verdict {
        check(object)
    }

    async fn validate_update(
        &self,
        _old: &@@kind@@,
        object: &@@kind@@,
        _: &AdmissionRequest<@@kind@@>,
    ) -> Verdict {
        check(object)
    }
}

/// Whether `object` is valid: denies an empty `content`. Replace with your rules.
pub fn check(object: &@@kind@@) -> Verdict {
    if object.spec.content.is_empty() {
        return Verdict::deny("spec.content is empty");
    }
    Verdict::allow()
}
