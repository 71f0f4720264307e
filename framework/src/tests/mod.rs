//! Tests of the crate as a whole.

mod error_text;
mod file_cycles;
mod layers;
mod source;
