//! Fuzzes kubeward::testing::fuzz::list_page.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubeward::testing::fuzz::list_page(data));
