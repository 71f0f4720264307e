//! Fuzzes kubeward::testing::fuzz::watch_stream.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubeward::testing::fuzz::watch_stream(data));
