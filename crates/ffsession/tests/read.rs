//! Reading generated sessions against an independent oracle (serde_json::Value),
//! and every file of the bad-input corpus.

mod common;

use std::path::{Path, PathBuf};

use ffsession::format::FileSummary;
use ffsession::session::{TabFilter, TabState};
use ffsession::SessionData;
use ffsession_gen::{generate, mozlz4, Spec};
use serde_json::Value;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/bad")
}

/// URL and title of the entry a tab shows, computed from the raw JSON.
fn oracle_current(tab: &Value) -> (Option<String>, Option<String>) {
    let entries = tab["entries"].as_array().unwrap();
    let index = tab["index"].as_u64().unwrap() as usize;
    let e = &entries[index.clamp(1, entries.len()) - 1];
    (
        e["url"].as_str().map(str::to_owned),
        e["title"].as_str().map(str::to_owned),
    )
}

#[test]
fn generated_sessions_read_like_the_json_says() {
    let spec = Spec {
        tabs: 57,
        windows: 4,
        ..Spec::default()
    };
    let json = generate(&spec);
    let value: Value = serde_json::from_str(&json).unwrap();
    for bytes in [mozlz4(json.as_bytes()), json.clone().into_bytes()] {
        let data = SessionData::from_bytes("gen", bytes).unwrap();
        assert_eq!(data.json(), json.as_bytes());
        let session = data.parse().unwrap();
        let summary = session.summary();
        let windows = value["windows"].as_array().unwrap();
        assert_eq!(summary.windows, windows.len());
        assert_eq!(summary.tabs, spec.tabs);
        assert_eq!(
            summary.closed_tabs,
            windows.len() * spec.closed_tabs_per_window
        );
        assert_eq!(summary.closed_windows, spec.closed_windows);
        assert_eq!(summary.timestamps.last_update, Some(spec.last_update));

        type Row = (usize, usize, Option<String>, Option<String>, bool);
        let expected: Vec<Row> = windows
            .iter()
            .enumerate()
            .flat_map(|(w, win)| {
                win["tabs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .enumerate()
                    .map(move |(i, t)| {
                        let (url, title) = oracle_current(t);
                        (
                            w + 1,
                            i + 1,
                            url,
                            title,
                            t["pinned"].as_bool().unwrap_or(false),
                        )
                    })
            })
            .collect();
        let actual: Vec<_> = session
            .tab_records(TabFilter::default())
            .map(|r| {
                (
                    r.window,
                    r.position,
                    r.url.map(str::to_owned),
                    r.title.map(str::to_owned),
                    r.pinned,
                )
            })
            .collect();
        assert_eq!(actual, expected);
        let closed = session
            .tab_records(TabFilter {
                window: None,
                include_closed: true,
            })
            .filter(|r| r.state != TabState::Open)
            .count();
        let closed_window_tabs: usize = value["_closedWindows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["tabs"].as_array().unwrap().len())
            .sum();
        assert_eq!(closed, summary.closed_tabs + closed_window_tabs);
    }
}

/// Files around the sizes at which a file is mapped instead of read (64 KiB)
/// and the JSON goes on huge pages (1 MiB, and a last 2 MiB at least half
/// used): every way of reading a file gives what its bytes hold.
#[test]
fn files_of_every_size_read_as_their_bytes_do() {
    let dir = tempfile::tempdir().unwrap();
    for size in [40_000, 300_000, 1_200_000, 3_300_000] {
        let json = generate(&Spec::sized(size));
        for (name, bytes) in [
            ("s.jsonlz4", mozlz4(json.as_bytes())),
            ("s.json", json.clone().into_bytes()),
        ] {
            let path = dir.path().join(format!("{size}-{name}"));
            std::fs::write(&path, &bytes).unwrap();
            let expected = SessionData::from_bytes("mem", bytes)
                .unwrap()
                .parse()
                .unwrap()
                .summary();
            let data = SessionData::read(&path).unwrap();
            assert_eq!(data.json(), json.as_bytes(), "{}", path.display());
            assert_eq!(data.parse().unwrap().summary(), expected);
            let (at_once, tabs) = SessionData::read_parsed(&path, |data, session| {
                assert_eq!(data.json(), json.as_bytes());
                (
                    session.summary(),
                    session.windows.iter().map(|w| w.tabs.len()).sum::<usize>(),
                )
            })
            .unwrap();
            assert_eq!(at_once, expected);
            assert_eq!(tabs, expected.tabs);
            let file = FileSummary::read(&path).unwrap();
            assert_eq!(file.summary, expected, "{}", path.display());
            assert_eq!(file.json_size, json.len());
        }
    }
}

#[test]
fn every_bad_file_is_a_clear_error_naming_the_file() {
    let mut seen = 0;
    for entry in std::fs::read_dir(corpus_dir()).unwrap() {
        let path = entry.unwrap().path();
        let result = SessionData::read(&path).and_then(|d| d.parse().map(|s| s.summary()));
        let err = result.expect_err(&format!("{} should not read", path.display()));
        let msg = err.to_string();
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert!(!msg.contains('\n'), "one line: {msg}");
        assert!(err.hint().is_some(), "no hint for {msg}");
        seen += 1;
    }
    assert!(seen >= 30, "corpus has only {seen} files");
}

#[test]
fn odd_shapes_that_are_still_sessions_are_read() {
    // A field of another type is absent; deep nesting where the model reads is
    // skipped without recursion (the corpus that used to be rejected).
    for (name, bytes, tabs) in ffsession_gen::odd_corpus() {
        let data = SessionData::from_bytes(&name, bytes).unwrap();
        let session = data.parse().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(session.summary().tabs, tabs, "{name}");
    }
}

#[test]
fn the_corpus_is_what_the_generator_makes() {
    // The committed corpus stays in sync with `ffsession-gen corpus`.
    for (name, bytes) in ffsession_gen::bad_corpus() {
        let on_disk = std::fs::read(corpus_dir().join(&name)).unwrap_or_default();
        assert!(on_disk == bytes, "{name} differs: run `cargo run -p ffsession-gen -- corpus crates/ffsession/tests/corpus/bad`");
    }
}

/// Sessions written by a real Firefox ESR (e2e/run.py --save-fixtures), read and
/// compared with what Firefox itself reported over Marionette when it wrote them.
#[test]
fn real_firefox_files_match_what_firefox_reported() {
    let dir = common::fixture("firefox");
    let mut checked = 0;
    for path in common::jsonlz4_files(&dir) {
        let expected_path = path.with_extension("expected.json");
        let expected: Value =
            serde_json::from_slice(&std::fs::read(&expected_path).unwrap()).unwrap();
        let data = SessionData::read(&path).unwrap();
        let session = data.parse().unwrap();
        let summary = session.summary();
        let name = path.display().to_string();
        let windows = expected["open_windows"].as_array().unwrap();
        assert_eq!(summary.windows, windows.len(), "{name}");
        assert_eq!(
            summary.closed_tabs as u64,
            expected["closed_tabs"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            summary.closed_windows as u64,
            expected["closed_windows"].as_u64().unwrap(),
            "{name}"
        );

        // Windows as a multiset of per-window tab lists (Firefox may order windows differently).
        let mut want: Vec<String> = windows.iter().map(|w| w.to_string()).collect();
        let mut got: Vec<String> = (1..=summary.windows)
            .map(|n| {
                let tabs: Vec<Value> = session
                    .tab_records(TabFilter { window: Some(n), include_closed: false })
                    .map(|r| {
                        serde_json::json!({"container": r.container, "group": r.group, "hidden": r.hidden,
                            "history_len": r.history_len, "pinned": r.pinned, "title": r.title, "url": r.url})
                    })
                    .collect();
                Value::Array(tabs).to_string()
            })
            .collect();
        want.sort();
        got.sort();
        assert_eq!(got, want, "{name}: open tabs differ from Firefox's");

        let mut want_closed: Vec<String> = expected["closed_tab_urls_by_window"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.to_string())
            .collect();
        let mut got_closed: Vec<String> = (1..=summary.windows)
            .map(|n| {
                let urls: Vec<&str> = session
                    .tab_records(TabFilter {
                        window: Some(n),
                        include_closed: true,
                    })
                    .filter(|r| r.state == TabState::Closed)
                    .map(|r| r.url.unwrap())
                    .collect();
                serde_json::to_string(&urls).unwrap()
            })
            .collect();
        want_closed.sort();
        got_closed.sort();
        assert_eq!(got_closed, want_closed, "{name}: closed tabs differ");

        let closed_window_urls: Vec<Vec<&str>> = session
            .closed_windows
            .iter()
            .map(|w| w.tabs.iter().map(|t| t.url().unwrap()).collect())
            .collect();
        assert_eq!(
            serde_json::to_value(&closed_window_urls).unwrap(),
            expected["closed_window_tab_urls"],
            "{name}"
        );
        checked += 1;
    }
    assert!(
        checked >= 4,
        "only {checked} real Firefox fixtures in {}",
        dir.display()
    );
}
