//! Fuzzes kubeward::testing::fuzz::selectors.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubeward::testing::fuzz::selectors(data));
