use super::*;
#[cfg(target_os = "linux")]
use crate::session::threads::leave_core;
use ffsession_gen::{generate, Spec};

fn same(json: &[u8], split: usize) {
    let fast = parse_split(json, split).expect("the split was adopted");
    let reference = Session::from_json_serial(json).unwrap();
    assert_eq!(
        format!("{fast:?}"),
        format!("{reference:?}"),
        "split at {split}"
    );
}

#[test]
fn every_tab_boundary_gives_the_reference_result() {
    let json = generate(&Spec {
        tabs: 40,
        windows: 4,
        closed_windows: 2,
        ..Spec::default()
    });
    let splits: Vec<usize> = memchr::memmem::find_iter(json.as_bytes(), TAB_START)
        .map(|i| i + 1)
        .collect();
    assert!(splits.len() > 30, "{}", splits.len());
    for split in splits {
        same(json.as_bytes(), split);
    }
}

/// A session large enough for two threads, in one window or several.
fn large(windows: usize) -> String {
    let json = generate(&Spec {
        windows,
        ..Spec::sized(3_000_000)
    });
    assert!(json.len() >= PARALLEL_MIN_BYTES);
    json
}

/// `from_json` (two threads where it can) gives exactly what the serial
/// reference gives, result or error.
fn same_as_reference(json: &[u8]) {
    let fast = Session::from_json(json).map(|s| format!("{s:?}"));
    let reference = Session::from_json_serial(json).map(|s| format!("{s:?}"));
    assert_eq!(fast, reference);
}

#[test]
fn damage_after_the_split_gives_the_reference_error() {
    for windows in [1, 7] {
        let json = large(windows);
        let split = split_point(json.as_bytes()).unwrap();
        let after = |needle: &str| split + json[split..].find(needle).unwrap();
        // (what, document, valid)
        let mut cases: Vec<(&str, Vec<u8>, bool)> = Vec::new();
        for (what, at) in [
            ("bad UTF-8 after", split + 1000),
            ("bad UTF-8 before", split / 2),
        ] {
            let mut bad = json.clone().into_bytes();
            bad[at] = 0xff;
            cases.push((what, bad, false));
        }
        let truncated = json.as_bytes()[..split + (json.len() - split) / 2].to_vec();
        cases.push(("truncated", truncated, false));
        let mut bad = json.clone();
        let at = after("\"lastAccessed\":");
        bad.replace_range(at..at + 1, "{");
        cases.push(("syntax error in a tab", bad.into_bytes(), false));
        let mut dup = json.clone();
        dup.insert_str(after("\"selected\":"), "\"selected\":1,");
        cases.push(("duplicate field", dup.into_bytes(), false));
        // Deep nesting in a field the model ignores is valid: serde_json
        // skips it without recursion, in a tab read by either thread.
        let mut deep = json.clone();
        let at = after("\"extData\":") + "\"extData\":".len();
        deep.insert_str(
            at,
            &format!("{}0{},\"x\":", "[".repeat(500), "]".repeat(500)),
        );
        cases.push(("deep nesting in an ignored field", deep.into_bytes(), true));
        if let Some(i) = json[split..].find("{\"tabs\":[") {
            let mut wrong = json.clone();
            wrong.replace_range(split + i + 8..split + i + 9, "7,\"x\":[");
            // Read as a window without tabs, by both paths.
            cases.push(("tabs of the wrong type", wrong.into_bytes(), true));
        }
        for (what, case, valid) in &cases {
            let case = &case[..];
            assert_eq!(Session::from_json_serial(case).is_ok(), *valid, "{what}");
            if let Some(split) = split_point(case) {
                assert_eq!(parse_split(case, split).is_ok(), *valid, "{what}");
            }
            same_as_reference(case);
        }
    }
}

#[test]
fn undamaged_large_sessions_match_the_reference() {
    for windows in [1, 2, 7, 25] {
        let json = large(windows);
        let split = split_point(json.as_bytes()).unwrap();
        assert!(
            parse_split(json.as_bytes(), split).is_ok(),
            "{windows} windows"
        );
        same_as_reference(json.as_bytes());
    }
    // Whitespace between tokens (and in strings, which stay valid).
    let spaced = large(3).replace(",\"", ",\n \"").replace("[{", "[ {");
    let split = split_point(spaced.as_bytes()).unwrap();
    assert!(parse_split(spaced.as_bytes(), split).is_ok());
    same_as_reference(spaced.as_bytes());
    // After the end only JSON whitespace may follow: form feed is not.
    for tail in ["\n\t\r ", "\u{c}", "x"] {
        same_as_reference(format!("{spaced}{tail}").as_bytes());
    }
}

#[test]
fn real_firefox_files_split_at_every_tab() {
    // Written by Firefox ESR (e2e/run.py --save-fixtures): its own key order.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/firefox");
    let mut splits = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "jsonlz4") {
            continue;
        }
        let json = crate::format::decompress(&std::fs::read(&path).unwrap()).unwrap();
        for at in memchr::memmem::find_iter(&json, TAB_START) {
            same(&json, at + 1);
            splits += 1;
        }
    }
    assert!(splits >= 20, "only {splits} tab boundaries in the fixtures");
}

#[test]
fn generated_sessions_split_in_the_middle() {
    for mb in [1, 4] {
        let json = generate(&Spec::sized(mb * 1_000_000));
        let split = split_point(json.as_bytes()).unwrap();
        same(json.as_bytes(), split);
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_thread_leaves_the_given_core_and_keeps_every_core_allowed() {
    use rustix::thread::{sched_getaffinity, sched_getcpu};
    let allowed = sched_getaffinity(None).unwrap();
    if allowed.count() < 2 {
        eprintln!("one core allowed here: nothing to leave for");
        return;
    }
    thread::scope(|scope| {
        scope
            .spawn(|| {
                let here = sched_getcpu();
                leave_core(here);
                assert_ne!(sched_getcpu(), here);
                assert_eq!(sched_getaffinity(None).unwrap(), allowed);
            })
            .join()
            .unwrap();
    });
}

#[test]
fn a_thread_spawned_beside_returns_its_result() {
    let n = thread::scope(|scope| spawn_beside(scope, || 6 * 7).join().unwrap());
    assert_eq!(n, 42);
}
