#![no_main]
//! Fuzz target `session`: see `ffsession_fuzz::session` (fuzz/src/lib.rs).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ffsession_fuzz::session(data));
