//! Tests of the converter and the review against three versions of a test kind.

mod converter;
mod gizmo;
mod review;
mod round_trip;
