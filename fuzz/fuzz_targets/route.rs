//! Fuzz target `route`: the logic and its oracle are `plimsoll_fuzz::route`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| plimsoll_fuzz::route(data));
