//! `diff` and `stats` on real Firefox files and on a store in a temp folder.

use std::collections::HashMap;
use std::fs;
use std::path::PathBuf;

use crate::common::{
    expect_error, ok_json, ok_output, ok_stdout, stderr, stdout_json, Run, TestEnv,
};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../ffsession/tests/fixtures/firefox")
        .join(name)
}

/// `ffsession diff A B [EXTRA...]` on two fixtures; must succeed.
fn diff_files(env: &TestEnv, a: &str, b: &str, extra: &[&str]) -> std::process::Output {
    ok_output(
        env.cmd()
            .arg("diff")
            .arg(fixture(a))
            .arg(fixture(b))
            .args(extra),
    )
}

/// `ffsession diff A B --json` on two fixtures, parsed; must succeed.
fn diff_json(env: &TestEnv, a: &str, b: &str) -> serde_json::Value {
    stdout_json(&diff_files(env, a, b, &["--json"]))
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

/// Two snapshots: s1's recovery file, then s2's; the profile is left with s2.
fn two_snapshots(env: &TestEnv) -> PathBuf {
    let profile = env.back_up_recovery(&fs::read(fixture("s1-recovery.jsonlz4")).unwrap());
    env.back_up_recovery(&fs::read(fixture("s2-recovery.jsonlz4")).unwrap());
    profile
}

/// Run `cmd`, check it failed with exit code 1 and a single
/// `ffsession: error: ` line, and return that line.
fn one_line_error(cmd: &mut assert_cmd::Command) -> String {
    let err = expect_error(cmd);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("ffsession: error: "), "{err}");
    err
}

#[test]
fn diff_of_two_real_files_matches_firefoxs_own_tab_lists() {
    let env = TestEnv::new();
    let (s1, s2) = (expected_urls("s1-recovery"), expected_urls("s2-recovery"));
    let d = diff_json(&env, "s1-recovery.jsonlz4", "s2-recovery.jsonlz4");
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
    let d = diff_json(&env, "s2-recovery.jsonlz4", "s2-sessionstore.jsonlz4");
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
    assert_eq!(env.snapshot_ids(&profile), [2, 1]);

    let strip = |mut v: serde_json::Value| {
        let o = v.as_object_mut().unwrap();
        o.remove("a_source");
        o.remove("b_source");
        v
    };
    let want = strip(diff_json(
        &env,
        "s1-recovery.jsonlz4",
        "s2-recovery.jsonlz4",
    ));

    let got = ok_json(env.store_cmd(&profile).args(["diff", "1", "2", "--json"]));
    assert_eq!(got["a_source"], "snapshot #1");
    assert_eq!(strip(got), want);

    let out = ok_output(
        env.store_cmd(&profile)
            .args(["diff", "1", "current", "--json"]),
    );
    assert!(
        stderr(&out).contains("ffsession: using "),
        "{}",
        stderr(&out)
    );
    let got = stdout_json(&out);
    assert!(got["b_source"].as_str().unwrap().starts_with("current ("));
    assert_eq!(strip(got), want);

    let removed = ok_stdout(
        env.store_cmd(&profile)
            .args(["diff", "2", "current", "--urls"]),
    );
    assert!(removed.is_empty(), "nothing removed since the last backup");
}

#[test]
fn bad_arguments_are_one_line_errors() {
    let env = TestEnv::new();
    let profile = two_snapshots(&env);
    let err = one_line_error(env.store_cmd(&profile).args(["diff", "99", "1"]));
    assert!(err.contains("99") && err.contains("hint:"), "{err}");
    let err = one_line_error(
        env.store_cmd(&profile)
            .args(["diff", "1", "no-such-file.jsonlz4"]),
    );
    assert!(err.contains("no-such-file.jsonlz4"), "{err}");
    let garbage = env.write("garbage.jsonlz4", b"mozLz40\0garbage");
    let err = one_line_error(env.store_cmd(&profile).arg("diff").arg(&garbage).arg("1"));
    assert!(err.contains("garbage.jsonlz4"), "{err}");
    one_line_error(env.store_cmd(&profile).args(["diff", "current", "current"]));
    // No store at all.
    let err = one_line_error(
        env.store_cmd_at(&profile, &env.path().join("nowhere"))
            .args(["diff", "1", "2"]),
    );
    assert!(err.contains("no backups yet"), "{err}");
}

#[test]
fn stats_counts_equal_list_and_the_plot_marks_corrupt_snapshots() {
    let env = TestEnv::new();
    let profile = two_snapshots(&env);
    // A third backup of a damaged file: stored and marked corrupt (exit 3).
    env.profile_with_recovery(b"mozLz40\0\xff\xff\xff\x7fdamaged");
    let out = env.store_cmd(&profile).arg("backup").run();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));

    let mut listed = env.list_snapshots(&profile);
    listed.reverse();
    let stats = ok_json(env.store_cmd(&profile).args(["stats", "--json"]));
    let rows = stats["snapshots"].as_array().unwrap();
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
    let text = ok_stdout(env.store_cmd(&profile).arg("stats").arg("--plot").arg(&svg));
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
    let profile = env.profile_with_recovery(b"");
    let err = one_line_error(env.store_cmd(&profile).args(["stats"]));
    assert!(err.contains("no backups yet"), "{err}");
}
