//! Fuzz target `record_verify`: the logic and its oracle are `plimsoll_fuzz::record_verify`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| plimsoll_fuzz::record_verify(data));
