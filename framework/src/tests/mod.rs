//! Tests of the crate as a whole.

mod file_cycles;
mod layers;
mod source;
