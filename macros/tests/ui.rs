//! Compile tests of `#[derive(Controller)]`: every mistake it reports, and inputs it accepts.

#[test]
fn the_derive_accepts_valid_input_and_points_at_each_mistake() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/*.rs");
}
