#![no_main]
//! Fuzz target `rescue`: see `ffsession_fuzz::rescue` (fuzz/src/lib.rs).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ffsession_fuzz::rescue(data));
