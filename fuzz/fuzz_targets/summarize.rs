#![no_main]
//! Fuzz target `summarize`: see `ffsession_fuzz::summarize` (fuzz/src/lib.rs).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ffsession_fuzz::summarize(data));
