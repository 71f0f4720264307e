
/// Fills in what a `@@kind@@` leaves out.
#[derive(Clone, Copy, Debug, Default)]
pub struct @@kind@@Defaulter;

impl Defaulter<@@kind@@> for @@kind@@Defaulter {
    async fn default(&self, object: &mut @@kind@@, _: &AdmissionRequest<@@kind@@>) -> Verdict {
        fill_in(object);
        Verdict::allow()
    }
}

/// Sets the defaults of `object`: an empty `content` becomes `"(empty)"`. Replace with yours.
pub fn fill_in(object: &mut @@kind@@) {
    if object.spec.content.is_empty() {
        "(empty)".clone_into(&mut object.spec.content);
    }
}
