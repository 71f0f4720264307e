//! Fuzzes kubeward::testing::fuzz::admission_http.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubeward::testing::fuzz::admission_http(data));
