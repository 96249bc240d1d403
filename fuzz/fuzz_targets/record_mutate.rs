//! Fuzz target `record_mutate`: the logic and its oracle are `plimsoll_fuzz::record_mutate`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| plimsoll_fuzz::record_mutate(data));
