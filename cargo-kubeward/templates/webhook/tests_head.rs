
#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::@@module@@::@@kind@@Spec;

    /// A `@@kind@@` with `content`, its other fields defaulted (a new spec field needs no change).
    fn object(content: &str) -> @@kind@@ {
        let mut object = @@kind@@::new("test", @@kind@@Spec::default());
        object.spec.content = content.to_owned();
        object
    }
