//! `tidy`, `tabs --archived`, `extract`, `merge`.

use std::fs;
use std::path::{Path, PathBuf};

use ffsession_gen::{generate, mozlz4, Spec};
use serde_json::{json, Value};

use crate::common::{
    expect_error, ok_json, ok_output, ok_stdout, printed_command, stderr, undo_id, Run, TestEnv,
};

const DAY: u64 = 86_400_000;

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A generated session (3 windows, 30 tabs) where every other tab was last
/// used 90 days ago, none pinned, the selected tab of each window recent.
pub(crate) fn aged_session() -> String {
    let mut v: Value = serde_json::from_str(&generate(&Spec::default())).unwrap();
    let now = now_ms();
    for w in v["windows"].as_array_mut().unwrap() {
        let selected = w["selected"].as_u64().unwrap_or(1) as usize;
        for (i, t) in w["tabs"].as_array_mut().unwrap().iter_mut().enumerate() {
            let old = i % 2 == 1 && i + 1 != selected;
            t["lastAccessed"] = json!(now - if old { 90 * DAY } else { DAY });
            t["pinned"] = json!(false);
        }
    }
    serde_json::to_string(&v).unwrap()
}

pub(crate) fn profile(env: &TestEnv, json: &str) -> PathBuf {
    env.profile_with(&[("sessionstore.jsonlz4", &mozlz4(json.as_bytes()))])
}

pub(crate) fn json_of(env: &TestEnv, file: &Path) -> Value {
    let out = env.path().join("out.json");
    ok_stdout(env.cmd().arg("decompress").arg(file).arg("-o").arg(&out));
    serde_json::from_slice(&fs::read(&out).unwrap()).unwrap()
}

#[test]
fn no_archived_tabs_yet_is_said_on_stderr() {
    let env = TestEnv::new();
    let p = profile(&env, &aged_session());
    ok_stdout(env.store_cmd(&p).arg("backup"));
    let out = ok_output(env.store_cmd(&p).args(["tabs", "--archived"]));
    assert!(out.stdout.is_empty());
    assert!(
        stderr(&out).contains("no archived tabs in")
            && printed_command(&stderr(&out), "tidy").is_some(),
        "{}",
        stderr(&out)
    );
    let out = ok_output(env.store_cmd(&p).args(["tabs", "--archived", "--json"]));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "[]");
    assert_eq!(stderr(&out), "");
}

#[test]
fn tidy_dry_run_then_apply_archive_search_and_undo() {
    let env = TestEnv::new();
    let json = aged_session();
    let p = profile(&env, &json);
    let session_file = p.join("sessionstore.jsonlz4");
    let before = fs::read(&session_file).unwrap();

    let report = ok_stdout(env.store_cmd(&p).args(["tidy"]));
    assert!(report.contains("--archive-older-than 30d"), "{report}");

    let dry =
        ok_stdout(
            env.store_cmd(&p)
                .args(["tidy", "--archive-older-than", "30d", "--dry-run"]),
        );
    assert!(dry.contains("dry run: nothing changed"), "{dry}");
    assert!(
        dry.contains("  close 1:") && dry.contains("  old, last used "),
        "{dry}"
    );
    assert_eq!(fs::read(&session_file).unwrap(), before);
    assert!(!env.store_dir().exists());

    let plan =
        ok_json(
            env.store_cmd(&p)
                .args(["tidy", "--archive-older-than", "30d", "-n", "--json"]),
        );
    let closed = plan["closed"].as_array().unwrap().len();
    assert!(closed >= 10, "{plan}");
    assert_eq!(plan["tabs_after"].as_u64().unwrap() as usize, 30 - closed);

    let done = ok_stdout(
        env.store_cmd(&p)
            .args(["tidy", "--archive-older-than", "30d"]),
    );
    let undo: i64 = undo_id(&done).parse().unwrap();
    let info = ok_json(env.cmd().arg("info").arg(&session_file).arg("--json"));
    assert_eq!(
        info["tabs"].as_u64().unwrap() as usize,
        30 - closed,
        "{info}"
    );

    let archived = ok_json(env.store_cmd(&p).args(["tabs", "--archived", "--json"]));
    let archived = archived.as_array().unwrap();
    assert_eq!(archived.len(), closed);
    assert!(archived
        .iter()
        .all(|a| a["snapshot"] == undo && a["reason"] == "old"));
    let bookmarks =
        ok_stdout(
            env.store_cmd(&p)
                .args(["tabs", "--archived", "--format", "bookmarks"]),
        );
    assert_eq!(bookmarks.matches("<DT><A HREF=").count(), closed);
    // Their folders say where they come from (not "recently closed").
    assert!(
        bookmarks.contains("<H3>Window 1: archived by ffsession tidy</H3>"),
        "{bookmarks}"
    );
    assert!(!bookmarks.contains("recently closed"), "{bookmarks}");

    // search and history mark them.
    let url = archived[0]["url"].as_str().unwrap();
    let hit = search_hit(&env, &p, url);
    assert_eq!(hit["archived"]["snapshot"], undo);
    let text = ok_stdout(env.store_cmd(&p).args(["search", &format!("\"{url}\"")]));
    assert!(
        text.contains(&format!("by tidy (old), in snapshot #{undo}")),
        "{text}"
    );
    let history = ok_stdout(env.store_cmd(&p).args(["history", url]));
    assert!(history.contains("then archived"), "{history}");
    assert!(!history.contains("stayed open"), "{history}");
    assert_eq!(hit["archived"]["stayed_open"], false, "{hit}");

    // Undo.
    ok_stdout(env.store_cmd(&p).args(["restore", &undo.to_string()]));
    let back = json_of(&env, &session_file);
    assert_eq!(back, serde_json::from_str::<Value>(&json).unwrap());
}

#[test]
fn bad_input_is_one_line_and_writes_nothing() {
    let env = TestEnv::new();
    let json = aged_session();
    let p = profile(&env, &json);
    let session_file = p.join("sessionstore.jsonlz4");
    let before = fs::read(&session_file).unwrap();
    let one_line = |err: &str| assert_eq!(err.trim_end().lines().count(), 1, "{err}");

    // A value the option cannot take is a usage error (exit 2), as clap's.
    let out = env
        .store_cmd(&p)
        .args(["tidy", "--archive-older-than", "30 days"])
        .run();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let first = err.lines().next().unwrap_or_default();
    assert!(
        first.contains("'30 days'")
            && first.contains("--archive-older-than")
            && first.contains("30d"),
        "{err}"
    );

    // `tidy ARGS` of `profile`, which must fail with one line: that line.
    let refused = |profile: &Path, args: &[&str]| {
        let err = expect_error(env.store_cmd(profile).arg("tidy").args(args));
        one_line(&err);
        err
    };
    let err = refused(
        &p,
        &[
            "--archive-older-than",
            "0s",
            "--include-selected",
            "--include-grouped",
        ],
    );
    assert!(
        err.contains("would close every one of its 30 tabs") && err.contains("--allow-empty"),
        "{err}"
    );

    let firefox = ffsession_gen::FirefoxLockHolder::hold(&p);
    let err = refused(&p, &["--archive-older-than", "30d"]);
    assert!(
        err.contains("Firefox is running") && err.contains("quit Firefox"),
        "{err}"
    );
    drop(firefox);
    assert_eq!(fs::read(&session_file).unwrap(), before);
    assert!(!env.store_dir().exists());

    // A damaged newest file.
    std::thread::sleep(std::time::Duration::from_millis(20));
    env.profile_with(&[(
        "sessionstore-backups/recovery.jsonlz4",
        &before[..before.len() / 2],
    )]);
    let err = refused(&p, &["--archive-older-than", "30d"]);
    assert!(
        err.contains("damaged") && printed_command(&err, "rescue").is_some(),
        "{err}"
    );
    assert_eq!(fs::read(&session_file).unwrap(), before);
    assert!(!env.store_dir().exists());

    // No session at all.
    let empty = env.path().join("empty");
    fs::create_dir_all(&empty).unwrap();
    let err = refused(&empty, &["--archive-older-than", "30d"]);
    assert!(err.contains("no readable session file"), "{err}");
    assert_eq!(fs::read_dir(&empty).unwrap().count(), 0);
    assert!(!env.store_dir().exists());
}

#[test]
fn extract_and_merge_write_sessions_that_read_back() {
    let env = TestEnv::new();
    let json = aged_session();
    let p = profile(&env, &json);
    let original: Value = serde_json::from_str(&json).unwrap();

    let out = env.path().join("w2.jsonlz4");
    ok_stdout(
        env.store_cmd(&p)
            .args(["extract", "current", "--window", "2", "-o"])
            .arg(&out),
    );
    let w2 = json_of(&env, &out);
    assert_eq!(w2["windows"].as_array().unwrap().len(), 1);
    assert_eq!(w2["windows"][0], original["windows"][1]);
    assert_eq!(w2["_closedWindows"], json!([]));

    let title = original["windows"][0]["tabs"][0]["entries"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let q = env.path().join("q.jsonlz4");
    let r = ok_json(
        env.store_cmd(&p)
            .args([
                "extract",
                "current",
                "--query",
                &format!("\"{title}\""),
                "--json",
                "-o",
            ])
            .arg(&q),
    );
    assert!(r["tabs"].as_u64().unwrap() >= 1, "{r}");
    // A URL is matched as written, as `search` does; FTS5 syntax with --fts.
    let r = ok_json(
        env.store_cmd(&p)
            .args(["extract", "current", "--query", &title, "--json", "-o"])
            .arg(&q),
    );
    assert!(r["tabs"].as_u64().unwrap() >= 1, "{r}");
    let err = expect_error(
        env.store_cmd(&p)
            .args(["extract", "current", "--fts", "--query", &title, "-o"])
            .arg(&q),
    );
    assert!(err.contains("invalid search query"), "{err}");

    let merged = env.path().join("m.jsonlz4");
    let m = ok_json(
        env.store_cmd(&p)
            .args(["merge", "current"])
            .arg(&out)
            .args(["--json", "-o"])
            .arg(&merged),
    );
    assert_eq!(m["windows"], 4);
    assert_eq!(m["tabs"], 40);
    let d = ok_json(
        env.store_cmd(&p)
            .args(["merge", "current"])
            .arg(&out)
            .args(["--dedupe", "--json", "-o"])
            .arg(&merged),
    );
    assert_eq!(d["windows"], 3);
    assert!(d["tabs"].as_u64().unwrap() <= 30);

    // --archived after a tidy: the undo snapshot's archived tabs.
    let done = ok_stdout(
        env.store_cmd(&p)
            .args(["tidy", "--archive-older-than", "30d"]),
    );
    let undo = undo_id(&done);
    let a = env.path().join("a.jsonlz4");
    let r = ok_json(
        env.store_cmd(&p)
            .args(["extract", &undo, "--archived", "--json", "-o"])
            .arg(&a),
    );
    let archived = ok_json(env.store_cmd(&p).args(["tabs", "--archived", "--json"]));
    assert_eq!(
        r["tabs"].as_u64().unwrap() as usize,
        archived.as_array().unwrap().len()
    );

    let err = expect_error(
        env.store_cmd(&p)
            .args(["extract", "current", "--window", "9", "-o"])
            .arg(&a),
    );
    assert!(err.contains("no tab") || err.contains("window 9"), "{err}");
    let err = expect_error(env.cmd().arg("merge").arg(&a).arg("-o").arg(&a));
    assert!(err.contains("refusing to overwrite"), "{err}");
}

#[test]
fn extract_tab_keeps_exactly_the_tabs_named() {
    let env = TestEnv::new();
    let json = aged_session();
    let p = profile(&env, &json);
    let original: Value = serde_json::from_str(&json).unwrap();
    let out = env.path().join("tabs.jsonlz4");
    let r = ok_json(
        env.store_cmd(&p)
            .args([
                "extract", "current", "--tab", "2:1", "--tab", "1:2", "--json", "-o",
            ])
            .arg(&out),
    );
    assert_eq!(
        (r["windows"].as_u64(), r["tabs"].as_u64()),
        (Some(2), Some(2)),
        "{r}"
    );
    let got = json_of(&env, &out);
    // Each tab as Firefox wrote it, in its window, in file order.
    assert_eq!(
        got["windows"][0]["tabs"],
        json!([original["windows"][0]["tabs"][1]])
    );
    assert_eq!(
        got["windows"][1]["tabs"],
        json!([original["windows"][1]["tabs"][0]])
    );
    for (bad, what) in [("9:1", "tab 9:1"), ("1:999", "tab 1:999")] {
        let err = expect_error(
            env.store_cmd(&p)
                .args(["extract", "current", "--tab", bad, "-o"])
                .arg(&out),
        );
        assert!(err.contains(what), "{err}");
    }
    let out2 = env
        .store_cmd(&p)
        .args(["extract", "current", "--tab", "0:1", "-o"])
        .arg(&out)
        .run();
    assert_eq!(out2.status.code(), Some(2), "a usage error");
}

/// The (URL, last access) of every tab of a session, sorted.
fn tab_keys(session: &Value) -> Vec<(String, u64)> {
    let mut keys: Vec<(String, u64)> = session["windows"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|w| w["tabs"].as_array().unwrap())
        .map(|t| {
            let index = t["index"].as_u64().unwrap() as usize;
            let url = t["entries"][index - 1]["url"].as_str().unwrap().to_owned();
            (url, t["lastAccessed"].as_u64().unwrap())
        })
        .collect();
    keys.sort();
    keys
}

#[test]
fn extract_archived_gives_exactly_the_tabs_tidy_closed() {
    let env = TestEnv::new();
    // Every old tab shows the same page as the kept tab before it, and one
    // recent tab is a less recently used duplicate of the window's first.
    let mut v: Value = serde_json::from_str(&aged_session()).unwrap();
    for w in v["windows"].as_array_mut().unwrap() {
        let tabs = w["tabs"].as_array_mut().unwrap();
        for i in (1..tabs.len()).step_by(2) {
            let (entries, index) = (tabs[i - 1]["entries"].clone(), tabs[i - 1]["index"].clone());
            tabs[i]["entries"] = entries;
            tabs[i]["index"] = index;
        }
    }
    let w0 = &mut v["windows"][0]["tabs"];
    let first = w0[0].clone();
    w0[2]["entries"] = first["entries"].clone();
    w0[2]["index"] = first["index"].clone();
    w0[2]["lastAccessed"] = json!(first["lastAccessed"].as_u64().unwrap() - 1000);
    let p = profile(&env, &serde_json::to_string(&v).unwrap());
    ok_output(env.store_cmd(&p).arg("backup"));
    let before_tidy = env.snapshot_ids(&p)[0];

    let args = ["tidy", "--archive-older-than", "30d", "--close-duplicates"];
    let plan = ok_json(env.store_cmd(&p).args(args).args(["-n", "--json"]));
    let mut closed: Vec<(String, u64)> = plan["closed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["url"].as_str().unwrap().to_owned(),
                c["last_accessed"].as_u64().unwrap(),
            )
        })
        .collect();
    closed.sort();
    assert!(closed.len() >= 10, "{plan}");
    let done = ok_stdout(env.store_cmd(&p).args(args));
    let undo = undo_id(&done);

    let out = env.path().join("archived.jsonlz4");
    let r = ok_json(
        env.store_cmd(&p)
            .args(["extract", &undo, "--archived", "--json", "-o"])
            .arg(&out),
    );
    assert_eq!(r["tabs"].as_u64().unwrap() as usize, closed.len(), "{r}");
    assert_eq!(tab_keys(&json_of(&env, &out)), closed);

    // Nothing archived there: an error, not whatever tabs share a URL.
    for source in ["current".to_owned(), before_tidy.to_string()] {
        let err = expect_error(
            env.store_cmd(&p)
                .args(["extract", &source, "--archived", "-o"])
                .arg(env.path().join("none.jsonlz4")),
        );
        assert!(
            err.contains("--archived") || err.contains("holds no tab"),
            "{source}: {err}"
        );
        assert!(
            err.contains(&format!("snapshot {undo} holds archived tabs")),
            "{err}"
        );
    }
    let file = p.join("sessionstore.jsonlz4");
    let err = expect_error(
        env.store_cmd(&p)
            .args(["extract"])
            .arg(&file)
            .args(["--archived", "-o"])
            .arg(env.path().join("none.jsonlz4")),
    );
    assert!(err.contains("give its id as SOURCE"), "{err}");
    assert!(!env.path().join("none.jsonlz4").exists());

    // Every closed tab had a twin of its URL that tidy kept: once a backup
    // after the tidy has it open, history and search say a copy was
    // archived and the page stayed open, never that the page was archived.
    ok_output(env.store_cmd(&p).arg("backup"));
    let url = &closed[0].0;
    let history = ok_stdout(env.store_cmd(&p).args(["history", url]));
    assert!(
        history.contains("a copy of it archived") && history.contains("another stayed open"),
        "{history}"
    );
    assert!(!history.contains("then archived"), "{history}");
    let hit = search_hit(&env, &p, url);
    assert_eq!(hit["archived"]["stayed_open"], true, "{hit}");
}

/// The hit of `url` when `search --json` looks for it as a phrase in the
/// test store of `profile` (there must be one).
fn search_hit(env: &TestEnv, profile: &Path, url: &str) -> serde_json::Value {
    let hits = ok_json(
        env.store_cmd(profile)
            .args(["search", &format!("\"{url}\""), "--json"]),
    );
    hits.as_array()
        .unwrap()
        .iter()
        .find(|h| h["url"] == url)
        .cloned()
        .unwrap_or_else(|| panic!("{hits}"))
}
