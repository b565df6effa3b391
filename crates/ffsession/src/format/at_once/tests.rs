use super::*;
use ffsession_gen::{generate, mozlz4, piecewise_specs, Spec};

#[test]
fn generated_sessions_read_at_once_as_the_ordinary_read_does() {
    for spec in piecewise_specs() {
        let file = mozlz4(generate(&spec).as_bytes());
        for step in [4_093, 70_000, 300_000, Step::EVERY.bytes] {
            for lockstep in [false, true] {
                // Read by the fast parse, not left to the reference.
                assert_eq!(
                    assert_at_once_matches_reference(&file, step, lockstep),
                    Some(true),
                    "{spec:?}, step {step}"
                );
            }
        }
    }
}

#[test]
fn a_step_per_byte_reads_as_one_step_does() {
    // Every value cut at every byte: each step of the walk is run on text
    // that ends inside it, and must wait for more rather than misread it.
    let json = concat!(
        r#"{"windows":[{"tabs":[{"entries":[{"url":"http://a/","title":"日本語 🦊"}],"#,
        r#""pinned":true,"index":12345},{"entries":[],"hidden":1}],"_closedTabs":[{}],"#,
        r#""groups":[{}],"title":"ü","width":1280}],"_closedWindows":[{"tabs":[{"entries":[]}]}],"#,
        r#""selectedWindow":1,"session":{"lastUpdate":1700000000123,"recentCrashes":0}}  "#,
    );
    let file = mozlz4(json.as_bytes());
    for step in 1..=9 {
        let read = assert_at_once_matches_reference(&file, step, true);
        assert_eq!(read, Some(true), "step {step}");
    }
}

#[test]
fn damaged_files_and_bad_json_fail_as_the_ordinary_read_does() {
    let json = generate(&Spec::default());
    let file = mozlz4(json.as_bytes());
    // Cut short: damaged, given back to the ordinary read.
    let cut = &file[..file.len() / 2];
    assert_eq!(assert_at_once_matches_reference(cut, 4096, false), None);
    // Not UTF-8 (a byte of a title): given back.
    let mut bad = json.clone().into_bytes();
    let at = json.find("title").unwrap();
    bad[at] = 0xFF;
    assert_eq!(
        assert_at_once_matches_reference(&mozlz4(&bad), 4096, false),
        None
    );
    // Not a session: the parse error, worded as the ordinary parse words it.
    let cut = &json.as_bytes()[..json.len() - 40];
    let read = |json: &[u8]| assert_at_once_matches_reference(&mozlz4(json), 4096, true);
    assert_eq!(read(cut), Some(false));
    assert_eq!(read(b"[1,2]"), Some(false));
}

#[test]
fn a_large_file_is_read_at_once_with_what_its_data_says() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("recovery.jsonlz4");
    let json = generate(&Spec {
        tabs: 400,
        ..Spec::default()
    });
    assert!(json.len() >= PARALLEL_MIN_BYTES);
    std::fs::write(&path, mozlz4(json.as_bytes())).unwrap();
    let (tabs, size, format) = SessionData::read_parsed(&path, |data, session| {
        (session.summary().tabs, data.json().len(), data.format())
    })
    .unwrap();
    assert_eq!((tabs, size, format), (400, json.len(), Format::Mozlz4));
    let missing = SessionData::read_parsed(dir.path().join("none"), |_, _| ()).unwrap_err();
    assert!(missing.to_string().contains("none"), "{missing}");
}
