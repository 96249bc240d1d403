//! Fuzz target `dockercloud_exec`: the logic and its oracle are `plimsoll_fuzz::dockercloud_exec`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| plimsoll_fuzz::dockercloud_exec(data));
