#![no_main]
//! Fuzz target `zen`: see `ffsession_fuzz::zen` (fuzz/src/lib.rs).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ffsession_fuzz::zen(data));
