//! Replays every input in `tests/fuzz-regressions/` through the checks of the
//! cargo-fuzz targets (`fuzz/`): the `mozlz4` target (detect, decompress,
//! compress round trip) and the `session` target (`SessionData::from_bytes`,
//! `parse`, `parse_meta`, summary, tab records with closed tabs, every export
//! format, and `Session::from_json` on the raw bytes), the `rescue` target
//! (salvage of the input and of cuts of it), the `summarize` target (the
//! summary counted in pieces against the reference parse's), the `tab`
//! target (the quick tab reader against serde_json), the `at_once`
//! target (a session parsed while it decodes against the ordinary read), and
//! the `zen` target (Zen's sessions file, its records and exports).
//!
//! The checks are not copied: `fuzz/src/lib.rs` is compiled into this test as a
//! module, so the test and the fuzzer cannot drift apart. Each input must come
//! back (`Ok` or `Err`) without a panic or a failed check.
//!
//! To add a regression: minimize it (`cargo +nightly fuzz tmin <target> <crash>`)
//! and copy it here as `<target>-<short-description>.bin`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

#[allow(dead_code)]
#[path = "../../../fuzz/src/lib.rs"]
mod fuzz_checks;

fn inputs() -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-regressions");
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("read_dir entry").path())
        .filter(|path| path.is_file())
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (name, bytes)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn regression_folder_is_not_empty() {
    assert!(
        !inputs().is_empty(),
        "tests/fuzz-regressions/ holds no inputs"
    );
}

#[test]
fn every_input_passes_the_mozlz4_and_session_checks() {
    let inputs = inputs();
    assert!(
        !inputs.is_empty(),
        "tests/fuzz-regressions/ holds no inputs"
    );
    let mut failures = Vec::new();
    for (name, bytes) in &inputs {
        type Check = fn(&[u8]);
        let targets: [(&str, Check); 7] = [
            ("mozlz4", fuzz_checks::mozlz4),
            ("session", fuzz_checks::session),
            ("rescue", fuzz_checks::rescue),
            ("summarize", fuzz_checks::summarize),
            ("tab", fuzz_checks::tab),
            ("at_once", fuzz_checks::at_once),
            ("zen", fuzz_checks::zen),
        ];
        for (target, check) in targets {
            if catch_unwind(AssertUnwindSafe(|| check(bytes))).is_err() {
                failures.push(format!("{name}: {target} checks panicked"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The first fuzz finding (session_json, `[[],[], 4]`): serde's derive also read
/// a struct from a JSON array of its fields in order, so this parsed as a
/// session with no windows and window 4 selected.
#[test]
fn a_json_array_is_not_a_session() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz-regressions/session_json-top-level-array-parsed-as-session.bin");
    let input = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(ffsession::Session::from_json(&input).is_err());
    assert!(ffsession::session::SessionMeta::from_json(&input).is_err());
    // An array in `windows` is skipped (an element that is not an object),
    // never read as a window of its fields in order.
    let s = ffsession::Session::from_json(br#"{"windows":[[[]]]}"#).unwrap();
    assert_eq!(s.windows.len(), 0, "a window read from an array");
}
