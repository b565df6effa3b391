#![no_main]
//! Fuzz target `session_json`: see `ffsession_fuzz::session_json` (fuzz/src/lib.rs).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ffsession_fuzz::session_json(data));
