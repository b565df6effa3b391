//! `diff` and `stats` on real Firefox files and on a store in a temp folder.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::common::{ok_json, stderr, stdout_json, TestEnv};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../ffsession/tests/fixtures/firefox")
        .join(name)
}

/// `ffsession diff A B [EXTRA...]` on two fixtures; must succeed.
fn diff_files(env: &TestEnv, a: &str, b: &str, extra: &[&str]) -> std::process::Output {
    let out = env
        .cmd()
        .arg("diff")
        .arg(fixture(a))
        .arg(fixture(b))
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    out
}

/// Firefox's own list of open tab URLs for a fixture (its `.expected.json`).
fn expected_urls(stem: &str) -> Vec<String> {
    let text = fs::read_to_string(fixture(&format!("{stem}.expected.json"))).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["open_windows"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|w| w.as_array().unwrap().iter())
        .map(|t| t["url"].as_str().unwrap().to_owned())
        .collect()
}

/// `a - b` as multisets, sorted.
fn minus(a: &[String], b: &[String]) -> Vec<String> {
    let mut left: HashMap<&str, usize> = HashMap::new();
    for u in b {
        *left.entry(u).or_default() += 1;
    }
    let mut out: Vec<String> = a
        .iter()
        .filter(|u| match left.get_mut(u.as_str()) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => true,
        })
        .cloned()
        .collect();
    out.sort();
    out
}

fn urls_of(v: &serde_json::Value) -> Vec<String> {
    let mut out: Vec<String> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["url"].as_str().unwrap().to_owned())
        .collect();
    out.sort();
    out
}

fn profile_with(env: &TestEnv, recovery: &[u8]) -> PathBuf {
    env.profile_with(&[("sessionstore-backups/recovery.jsonlz4", recovery)])
}

fn cmd(env: &TestEnv, profile: &Path) -> assert_cmd::Command {
    env.store_cmd(profile)
}

/// Two snapshots: s1's recovery file, then s2's; the profile is left with s2.
fn two_snapshots(env: &TestEnv) -> PathBuf {
    let profile = profile_with(env, &fs::read(fixture("s1-recovery.jsonlz4")).unwrap());
    let out = cmd(env, &profile).arg("backup").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    profile_with(env, &fs::read(fixture("s2-recovery.jsonlz4")).unwrap());
    let out = cmd(env, &profile).arg("backup").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    profile
}

fn one_line_error(out: &std::process::Output) -> String {
    assert_eq!(out.status.code(), Some(1), "{}", stderr(out));
    let err = stderr(out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("ffsession: error: "), "{err}");
    err
}

#[test]
fn diff_of_two_real_files_matches_firefoxs_own_tab_lists() {
    let env = TestEnv::new();
    let (s1, s2) = (expected_urls("s1-recovery"), expected_urls("s2-recovery"));
    let out = diff_files(
        &env,
        "s1-recovery.jsonlz4",
        "s2-recovery.jsonlz4",
        &["--json"],
    );
    let d = stdout_json(&out);
    assert_eq!(urls_of(&d["removed"]), minus(&s1, &s2));
    assert_eq!(urls_of(&d["added"]), minus(&s2, &s1));
    assert!(!d["removed"].as_array().unwrap().is_empty());
    assert_eq!(d["a"]["tabs"], s1.len());
    assert_eq!(d["b"]["tabs"], s2.len());
    assert_eq!(d["a"]["windows"], 1);
    assert_eq!(d["b"]["windows"], 3);
    // Every tab of a is removed, moved or kept.
    let moved = d["moved"].as_array().unwrap().len();
    let removed = d["removed"].as_array().unwrap().len();
    assert!(removed + moved <= s1.len());
    // Windows are matched: a's only window is closed exactly when no b window shares a URL.
    let shared = s1.iter().any(|u| s2.contains(u));
    assert_eq!(
        d["windows_closed"].as_array().unwrap().len(),
        usize::from(!shared)
    );
    assert_eq!(
        d["windows_opened"].as_array().unwrap().len(),
        3 - usize::from(shared)
    );
    assert!(d["a_source"]
        .as_str()
        .unwrap()
        .ends_with("s1-recovery.jsonlz4"));

    // --urls: exactly the removed URLs, one per line, in a's order.
    let out = diff_files(
        &env,
        "s1-recovery.jsonlz4",
        "s2-recovery.jsonlz4",
        &["--urls"],
    );
    let mut lines: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort();
    assert_eq!(lines, minus(&s1, &s2));

    // Text: a summary line, then sections.
    let out = diff_files(&env, "s1-recovery.jsonlz4", "s2-recovery.jsonlz4", &[]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.lines().nth(2).unwrap().contains(&format!(
            "{} added, {removed} removed",
            fmt_tabs(minus(&s2, &s1).len())
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("\nremoved ({removed}):\n")),
        "{text}"
    );
}

fn fmt_tabs(n: usize) -> String {
    format!("{n} {}", if n == 1 { "tab" } else { "tabs" })
}

#[test]
fn diff_of_the_running_and_the_quit_file_has_no_tab_changes() {
    let env = TestEnv::new();
    let out = diff_files(
        &env,
        "s2-recovery.jsonlz4",
        "s2-sessionstore.jsonlz4",
        &["--json"],
    );
    let d = stdout_json(&out);
    let (a, b) = (
        expected_urls("s2-recovery"),
        expected_urls("s2-sessionstore"),
    );
    assert_eq!(urls_of(&d["removed"]), minus(&a, &b));
    assert_eq!(urls_of(&d["added"]), minus(&b, &a));
    assert_eq!(d["windows_opened"], serde_json::json!([]));
    assert_eq!(d["windows_closed"], serde_json::json!([]));
}

#[test]
fn diff_between_snapshots_and_current_equals_the_file_diff() {
    let env = TestEnv::new();
    let profile = two_snapshots(&env);
    let list = stdout_json(
        &cmd(&env, &profile)
            .args(["list", "--json"])
            .output()
            .unwrap(),
    );
    let ids: Vec<i64> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [2, 1]);

    let strip = |mut v: serde_json::Value| {
        let o = v.as_object_mut().unwrap();
        o.remove("a_source");
        o.remove("b_source");
        v
    };
    let files = diff_files(
        &env,
        "s1-recovery.jsonlz4",
        "s2-recovery.jsonlz4",
        &["--json"],
    );
    let want = strip(stdout_json(&files));

    let got = ok_json(cmd(&env, &profile).args(["diff", "1", "2", "--json"]));
    assert_eq!(got["a_source"], "snapshot #1");
    assert_eq!(strip(got), want);

    let out = cmd(&env, &profile)
        .args(["diff", "1", "current", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("ffsession: using "),
        "{}",
        stderr(&out)
    );
    let got = stdout_json(&out);
    assert!(got["b_source"].as_str().unwrap().starts_with("current ("));
    assert_eq!(strip(got), want);

    let out = cmd(&env, &profile)
        .args(["diff", "2", "current", "--urls"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        out.stdout.is_empty(),
        "nothing removed since the last backup"
    );
}

#[test]
fn bad_arguments_are_one_line_errors() {
    let env = TestEnv::new();
    let profile = two_snapshots(&env);
    let err = one_line_error(
        &cmd(&env, &profile)
            .args(["diff", "99", "1"])
            .output()
            .unwrap(),
    );
    assert!(err.contains("99") && err.contains("hint:"), "{err}");
    let err = one_line_error(
        &cmd(&env, &profile)
            .args(["diff", "1", "no-such-file.jsonlz4"])
            .output()
            .unwrap(),
    );
    assert!(err.contains("no-such-file.jsonlz4"), "{err}");
    let garbage = env.write("garbage.jsonlz4", b"mozLz40\0garbage");
    let err = one_line_error(
        &cmd(&env, &profile)
            .arg("diff")
            .arg(&garbage)
            .arg("1")
            .output()
            .unwrap(),
    );
    assert!(err.contains("garbage.jsonlz4"), "{err}");
    one_line_error(
        &cmd(&env, &profile)
            .args(["diff", "current", "current"])
            .output()
            .unwrap(),
    );
    // No store at all.
    let err = one_line_error(
        &env.cmd()
            .arg("--profile")
            .arg(&profile)
            .arg("--store")
            .arg(env.path().join("nowhere"))
            .args(["diff", "1", "2"])
            .output()
            .unwrap(),
    );
    assert!(err.contains("no backups yet"), "{err}");
}

#[test]
fn stats_counts_equal_list_and_the_plot_marks_corrupt_snapshots() {
    let env = TestEnv::new();
    let profile = two_snapshots(&env);
    // A third backup of a damaged file: stored and marked corrupt (exit 3).
    profile_with(&env, b"mozLz40\0\xff\xff\xff\x7fdamaged");
    let out = cmd(&env, &profile).arg("backup").output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));

    let list = stdout_json(
        &cmd(&env, &profile)
            .args(["list", "--json"])
            .output()
            .unwrap(),
    );
    let stats = ok_json(cmd(&env, &profile).args(["stats", "--json"]));
    let rows = stats["snapshots"].as_array().unwrap();
    let mut listed: Vec<&serde_json::Value> = list.as_array().unwrap().iter().collect();
    listed.reverse();
    assert_eq!(rows.len(), 3);
    for (row, snap) in rows.iter().zip(listed) {
        assert_eq!(row["id"], snap["id"]);
        assert_eq!(row["status"], snap["status"]);
        assert_eq!(row["tabs"], snap["counts"]["tabs"]);
        assert_eq!(row["windows"], snap["counts"]["windows"]);
    }
    assert_eq!(rows[0]["tabs"], expected_urls("s1-recovery").len());
    assert_eq!(rows[1]["tabs"], expected_urls("s2-recovery").len());
    assert_eq!(rows[2]["status"], "corrupt");

    let svg = env.path().join("tabs.svg");
    let out = cmd(&env, &profile)
        .arg("stats")
        .arg("--plot")
        .arg(&svg)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(
        lines[1].starts_with("#1 ") && lines[1].contains(" 3 "),
        "{text}"
    );
    assert!(lines[3].contains("CORRUPT"), "{text}");
    let chart = fs::read_to_string(&svg).unwrap();
    assert!(
        chart.starts_with("<svg"),
        "{}",
        &chart[..100.min(chart.len())]
    );
    assert!(chart.contains("corrupt snapshot"));
    assert!(
        chart.contains("#FF0000"),
        "a red marker for the corrupt snapshot"
    );
    assert!(chart.contains("sessionstore-backups/recovery.jsonlz4"));
}

#[test]
fn stats_without_snapshots_is_a_one_line_error() {
    let env = TestEnv::new();
    let profile = profile_with(&env, b"");
    let err = one_line_error(&cmd(&env, &profile).args(["stats"]).output().unwrap());
    assert!(err.contains("no backups yet"), "{err}");
}
