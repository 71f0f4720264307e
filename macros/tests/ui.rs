//! Compile tests of `#[derive(Controller)]`: every mistake it reports (accepted inputs: `accepted.rs`).

#[test]
fn the_derive_points_at_each_mistake() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
