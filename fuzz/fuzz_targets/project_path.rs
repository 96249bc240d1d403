//! Fuzz target `project_path`: the logic and its oracle are `plimsoll_fuzz::project_path`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| plimsoll_fuzz::project_path(data));
