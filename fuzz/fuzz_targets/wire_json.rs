//! Fuzz target `wire_json`: the logic and its oracle are `plimsoll_fuzz::wire_json`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| plimsoll_fuzz::wire_json(data));
