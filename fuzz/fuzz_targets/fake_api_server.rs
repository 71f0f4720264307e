//! Fuzzes kubeward::testing::fuzz::fake_api_server.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubeward::testing::fuzz::fake_api_server(data));
