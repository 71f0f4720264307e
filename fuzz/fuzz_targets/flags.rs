//! Fuzzes kubeward::testing::fuzz::flags.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubeward::testing::fuzz::flags(data));
