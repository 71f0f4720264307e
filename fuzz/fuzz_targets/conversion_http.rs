//! Fuzzes kubeward::testing::fuzz::conversion_http.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubeward::testing::fuzz::conversion_http(data));
