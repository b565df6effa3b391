//! `search` and `history` over the tab index that `backup` builds.

use std::path::PathBuf;

use ffsession_gen::Spec;
use serde_json::{json, Value};

use crate::common::{
    assert_contains_all, expect_error, failed_quietly, ok_json, ok_output, ok_stdout, session,
    stderr, with_tabs, Run, TestEnv,
};

struct Fixture {
    env: TestEnv,
    profile: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let env = TestEnv::new();
        let profile = env.empty_profile();
        Fixture { env, profile }
    }

    fn cmd(&self) -> assert_cmd::Command {
        self.env.store_cmd(&self.profile)
    }

    /// Write the session file and back it up; returns the new snapshot's id
    /// and time.
    fn backup(&self, tabs: &[(&str, &str)]) -> (i64, u64) {
        self.env.profile_with_recovery(&with_tabs(tabs));
        let report = ok_json(self.cmd().args(["backup", "--json"]));
        let snap = &report["snapshots"][0];
        (
            snap["id"].as_i64().unwrap(),
            snap["taken_at_ms"].as_u64().unwrap(),
        )
    }

    fn search(&self, args: &[&str]) -> Vec<Value> {
        let hits = ok_json(self.cmd().arg("search").args(args).arg("--json"));
        hits.as_array().unwrap().clone()
    }

    /// True when `search ARGS --json` finds nothing: exit code 1 and `[]`.
    fn no_hits(&self, args: &[&str]) -> bool {
        let out = self.cmd().arg("search").args(args).arg("--json").run();
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        crate::common::stdout_json(&out) == serde_json::json!([])
    }
}

const NARWHAL: (&str, &str) = (
    "https://tusks.example/ocean/narwhal",
    "Narwhal migration atlas",
);
const CAPYBARA: (&str, &str) = ("https://rodents.example/capybara", "Capybara hot springs");

#[test]
fn search_finds_tabs_by_title_and_url_across_backups() {
    let f = Fixture::new();
    let (id1, _) = f.backup(&[NARWHAL, CAPYBARA]);
    let (_, _) = f.backup(&[NARWHAL]);
    let (id3, _) = f.backup(&[NARWHAL]);
    // Seen at the sessions' own time (all three were last updated at the
    // generator's time), not when they were backed up.
    let session_time = Spec::default().last_update;

    let hits = f.search(&["narwhal"]);
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0]["title"], NARWHAL.1);
    assert_eq!(hits[0]["url"], NARWHAL.0);
    assert_eq!(hits[0]["snapshots"], 3);
    assert_eq!(hits[0]["first_seen_ms"], session_time);
    assert_eq!(hits[0]["last_seen_ms"], session_time);
    assert_eq!(hits[0]["newest_snapshot"], id3);

    // By a URL fragment only.
    let hits = f.search(&["rodents"]);
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0]["snapshots"], 1);
    assert_eq!(hits[0]["newest_snapshot"], id1);

    // Text output.
    let text = ok_stdout(f.cmd().args(["search", "hot springs"]));
    assert!(
        text.contains(CAPYBARA.1) && text.contains(CAPYBARA.0),
        "{text}"
    );
    assert!(text.contains(&format!("#{id1}")), "{text}");

    // Dates: everything was taken today (UTC), nothing in the year 2000.
    assert_eq!(f.search(&["narwhal", "--since", "2000-01-01"]).len(), 1);
    assert!(f.no_hits(&["narwhal", "--until", "2000-01-01"]));
    assert!(f.no_hits(&["narwhal", "--until", "2000-01-01T00:00:00Z"]));
}

#[test]
fn search_input_is_never_sql() {
    let f = Fixture::new();
    let tricky = (
        "https://x.example/?q=1",
        "It's \"quoted\"; DROP TABLE snapshots;--",
    );
    f.backup(&[tricky, NARWHAL]);
    assert_eq!(f.search(&["\"DROP TABLE\""]).len(), 1);
    assert_eq!(f.search(&["--fts", "\"DROP TABLE\""]).len(), 1);
    let none = f
        .cmd()
        .args(["search", "\"'; DELETE FROM snapshots; --\""])
        .run();
    assert_eq!(none.status.code(), Some(1), "{}", stderr(&none));
    assert_eq!(f.env.list_snapshots(&f.profile).len(), 1);
    assert_eq!(f.search(&["narwhal"]).len(), 1);
}

#[test]
fn search_errors_are_one_line_with_a_hint() {
    let f = Fixture::new();
    let err = expect_error(f.cmd().args(["search", "narwhal"]));
    assert!(err.contains("no backups yet"), "{err}");
    f.backup(&[NARWHAL]);

    let out = f.cmd().args(["search", "--fts", "\"narwhal"]).run();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("invalid search query"), "{err}");
    assert!(
        err.contains("hint:") && err.contains("double quotes") && err.contains("--fts"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    // Without --fts the same text is a word like any other.
    assert_eq!(f.search(&["\"narwhal"]).len(), 1);

    // A date the option cannot take is a usage error (exit 2).
    for bad in ["2026-13-45", "yesterday", "2026-11-01 noon"] {
        for option in ["--since", "--until"] {
            let out = f.cmd().args(["search", "narwhal", option, bad]).run();
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{err}");
            assert!(
                err.contains(option) && err.contains("write a date as 2026-11-01"),
                "{err}"
            );
        }
    }
}

#[test]
fn punctuation_is_literal_and_no_match_exits_1() {
    let f = Fixture::new();
    let local = ("http://127.0.0.1:8080/admin", "Local admin");
    let dotcom = ("https://example.com/docs/path", "Docs");
    let host = ("http://host/path/to/page", "Host page");
    f.backup(&[local, dotcom, host, NARWHAL]);
    for (query, url) in [
        ("127.0.0.1", local.0),
        ("example.com", dotcom.0),
        ("http://host/path", host.0),
        ("https://tusks.example/ocean/narwhal", NARWHAL.0),
        ("127.0.0.1:8080/admin", local.0),
    ] {
        let hits = f.search(&[query]);
        assert_eq!(hits.len(), 1, "{query}: {hits:?}");
        assert_eq!(hits[0]["url"], url, "{query}");
    }
    // The full FTS5 syntax behind --fts.
    let hits = f.search(&["--fts", "url:narwhal OR title:docs"]);
    assert_eq!(hits.len(), 2, "{hits:?}");

    // No match: exit 1 (as grep), a note on stderr, nothing on stdout; with
    // --json an empty list.
    let out = f.cmd().args(["search", "10.0.0.1"]).run();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    let err = stderr(&out);
    assert!(
        err.contains("no tabs match") && !err.contains("error"),
        "{err}"
    );
    let out = f.cmd().args(["search", "nothing-like-it", "--json"]).run();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(crate::common::stdout_json(&out), serde_json::json!([]));
    // An empty query is a usage error.
    let out = f.cmd().args(["search", "  "]).run();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));

    let help = ok_stdout(f.cmd().args(["search", "--help"]));
    assert!(help.contains("Exits with 1 when no tab matches"), "{help}");
}

#[test]
fn search_says_on_stderr_when_the_limit_cut_the_list() {
    let f = Fixture::new();
    let pod = ("https://tusks.example/ocean/narwhal-pod", "Narwhal pod");
    f.backup(&[NARWHAL, pod, CAPYBARA]);
    let cut = |args: &[&str]| {
        let out = ok_output(f.cmd().arg("search").args(args));
        let err = stderr(&out);
        let said = err.contains("more tabs match") && err.contains("--all");
        (String::from_utf8(out.stdout).unwrap(), said)
    };
    // Text: one tab shown, and stderr says more match and how to see them.
    let (text, said) = cut(&["narwhal", "--limit", "1"]);
    assert!(said, "{text}");
    assert_eq!(text.matches("https://").count(), 1, "{text}");
    // JSON: stdout keeps only the data shown; the note is on stderr.
    let (json, said) = cut(&["narwhal", "--limit", "1", "--json"]);
    assert!(said);
    let hits: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(hits.as_array().unwrap().len(), 1, "{hits}");
    // Nothing cut: nothing said.
    assert!(!cut(&["narwhal", "--limit", "2"]).1);
    let (json, said) = cut(&["narwhal", "--all", "--json"]);
    assert!(!said);
    let hits: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(hits.as_array().unwrap().len(), 2, "{hits}");
}

#[test]
fn search_takes_several_words_without_quotes_and_needs_them_all() {
    let f = Fixture::new();
    f.backup(&[NARWHAL, CAPYBARA]);
    let hits = f.search(&["narwhal", "atlas"]);
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0]["url"], NARWHAL.0);
    assert_eq!(
        f.search(&["narwhal", "atlas"]),
        f.search(&["narwhal atlas"])
    );
    // Every word must match, as in a search box.
    assert!(f.no_hits(&["narwhal", "springs"]));
    // Under --fts the words are one query too.
    assert_eq!(f.search(&["--fts", "narwhal", "OR", "capybara"]).len(), 2);
}

#[test]
fn search_in_an_empty_store_says_so() {
    let f = Fixture::new();
    drop(ffsession::store::Store::create_or_open(f.env.store_dir()).unwrap());
    let err = expect_error(f.cmd().args(["search", "narwhal"]));
    assert_contains_all(&err, &["no snapshots yet", "hint:"]);
}

#[test]
fn history_lists_the_stretches_a_url_was_open() {
    let f = Fixture::new();
    let (a, _) = f.backup(&[NARWHAL, CAPYBARA]);
    let (b, _) = f.backup(&[NARWHAL]);
    f.backup(&[CAPYBARA]);
    let (d, _) = f.backup(&[CAPYBARA, NARWHAL]);
    let stretches = ok_json(f.cmd().args(["history", NARWHAL.0, "--json"]));
    let stretches = stretches.as_array().unwrap();
    assert_eq!(stretches.len(), 2, "{stretches:?}");
    assert_eq!(stretches[0]["first_snapshot"], a);
    assert_eq!(stretches[0]["last_snapshot"], b);
    assert_eq!(stretches[0]["snapshots"], 2);
    assert_eq!(stretches[0]["windows"], serde_json::json!([1]));
    assert_eq!(stretches[1]["first_snapshot"], d);

    let text = ok_stdout(f.cmd().args(["history", NARWHAL.0]));
    assert!(text.contains(&format!("#{a} .. #{b}")), "{text}");
}

#[test]
fn history_of_an_unknown_url_exits_1_as_search_does() {
    let f = Fixture::new();
    f.backup(&[NARWHAL]);
    // As `search` with no match: exit 1, a note on stderr (not an error),
    // nothing on stdout; with --json an empty list.
    let out = f.cmd().args(["history", "https://never.example/"]).run();
    let err = failed_quietly(&out);
    assert!(
        err.contains("https://never.example/ is in no snapshot") && !err.contains("error"),
        "{err}"
    );
    let out = f
        .cmd()
        .args(["history", "https://never.example/", "--json"])
        .run();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(crate::common::stdout_json(&out), json!([]));
}

#[test]
fn history_shows_closed_appearances_as_search_counts_them() {
    let f = Fixture::new();
    let base: Value = serde_json::from_str(
        &session(Spec {
            tabs: 4,
            windows: 2,
            ..Spec::default()
        })
        .json,
    )
    .unwrap();
    let tab = json!({"entries": [{"url": NARWHAL.0, "title": NARWHAL.1}], "index": 1});
    let write = |v: &Value| {
        let packed = ffsession_gen::mozlz4(ffsession_gen::firefox_json(v).as_bytes());
        f.env.profile_with_recovery(&packed);
        ok_json(f.cmd().args(["backup", "--json"]))["snapshots"][0]["id"]
            .as_i64()
            .unwrap()
    };
    // Open in window 1; then only a recently closed tab of window 2 (twice);
    // then only in the first recently closed window; then gone.
    let mut open = base.clone();
    open["windows"][0]["tabs"]
        .as_array_mut()
        .unwrap()
        .push(tab.clone());
    let a = write(&open);
    let mut closed = base.clone();
    closed["windows"][1]["_closedTabs"] =
        json!([{"state": tab, "closedAt": 1, "title": NARWHAL.1}]);
    let b = write(&closed);
    let c = write(&closed);
    let mut closed_window = base.clone();
    closed_window["_closedWindows"] = json!([{"tabs": [tab], "selected": 1}]);
    let d = write(&closed_window);
    write(&base);

    let hits = f.search(&["narwhal"]);
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0]["snapshots"], 4);
    let stretches = ok_json(f.cmd().args(["history", NARWHAL.0, "--json"]));
    let stretches = stretches.as_array().unwrap();
    let got: Vec<(&str, i64, i64, u64, Value)> = stretches
        .iter()
        .map(|s| {
            (
                s["state"].as_str().unwrap(),
                s["first_snapshot"].as_i64().unwrap(),
                s["last_snapshot"].as_i64().unwrap(),
                s["snapshots"].as_u64().unwrap(),
                s["windows"].clone(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("open", a, a, 1, json!([1])),
            ("closed", b, c, 2, json!([2])),
            ("closed-window", d, d, 1, json!([1])),
        ]
    );
    // As many snapshots as search counts.
    let total: u64 = got.iter().map(|s| s.3).sum();
    assert_eq!(Value::from(total), hits[0]["snapshots"]);

    let text = ok_stdout(f.cmd().args(["history", NARWHAL.0]));
    assert!(!text.contains("in no snapshot"), "{text}");
    assert_contains_all(
        &text,
        &[
            &format!("(#{a} .. #{a}), open in window 1"),
            &format!("(#{b} .. #{c}), recently closed in window 2"),
            &format!("(#{d} .. #{d}), in recently closed window 1"),
        ],
    );
}

#[test]
fn reindex_gives_the_same_search_results() {
    let f = Fixture::new();
    f.backup(&[NARWHAL, CAPYBARA]);
    f.backup(&[NARWHAL]);
    let before = (f.search(&["narwhal"]), f.search(&["rodents"]));
    let out = ok_output(f.cmd().arg("reindex"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("indexed 2 snapshots:"), "{text}");
    // The index counts runs of snapshots, not a row per tab per snapshot.
    assert!(text.contains(" tab runs, "), "{text}");
    // No progress bar when stderr is not a terminal.
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
    assert_eq!((f.search(&["narwhal"]), f.search(&["rodents"])), before);

    let report = ok_json(f.cmd().args(["reindex", "--json"]));
    assert_eq!(report["snapshots"], 2);
    assert_eq!(report["runs"], report["entries"], "{report}");
}
