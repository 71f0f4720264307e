//! Tests of the crate as a whole.

mod layers;
mod source;
