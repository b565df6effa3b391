//! Reading generated sessions against an independent oracle (serde_json::Value),
//! and every file of the bad-input corpus.

use std::path::{Path, PathBuf};

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

        let expected: Vec<(usize, usize, Option<String>, Option<String>, bool)> = windows
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
fn the_corpus_is_what_the_generator_makes() {
    // The committed corpus stays in sync with `ffsession-gen corpus`.
    for (name, bytes) in ffsession_gen::bad_corpus() {
        let on_disk = std::fs::read(corpus_dir().join(&name)).unwrap_or_default();
        assert!(on_disk == bytes, "{name} differs: run `cargo run -p ffsession-gen -- corpus crates/ffsession/tests/corpus/bad`");
    }
}

#[test]
fn real_firefox_files_read_when_present() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/firefox");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md" || e == "json") {
            continue;
        }
        let data = SessionData::read(&path).unwrap();
        let session = data.parse().unwrap();
        assert!(session.summary().windows >= 1, "{}", path.display());
        assert!(
            session
                .tab_records(TabFilter::default())
                .all(|r| r.url.is_some()),
            "{}",
            path.display()
        );
    }
}
