//! Fuzzes kubeward::testing::fuzz::conversion_review.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubeward::testing::fuzz::conversion_review(data));
