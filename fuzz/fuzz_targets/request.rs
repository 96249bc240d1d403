//! Fuzz target `request`: the logic and its oracle are `plimsoll_fuzz::request`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| plimsoll_fuzz::request(data));
