
#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::@@module@@::@@kind@@Spec;

    fn object(content: &str) -> @@kind@@ {
        let spec = @@kind@@Spec {
            content: content.to_owned(),
        };
        @@kind@@::new("test", spec)
    }
