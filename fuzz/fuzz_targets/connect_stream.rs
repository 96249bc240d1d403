//! Fuzz target `connect_stream`: the logic and its oracle are `plimsoll_fuzz::connect_stream`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| plimsoll_fuzz::connect_stream(data));
