#![no_main]
//! Fuzz target `at_once`: see `ffsession_fuzz::at_once` (fuzz/src/lib.rs).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ffsession_fuzz::at_once(data));
