#![no_main]
//! Fuzz target `tab`: see `ffsession_fuzz::tab` (fuzz/src/lib.rs).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ffsession_fuzz::tab(data));
