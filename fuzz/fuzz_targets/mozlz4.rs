#![no_main]
//! Fuzz target `mozlz4`: see `ffsession_fuzz::mozlz4` (fuzz/src/lib.rs).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ffsession_fuzz::mozlz4(data));
