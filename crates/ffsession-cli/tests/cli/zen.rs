//! A Zen profile: Firefox's session and Zen's own sessions file backed up
//! together, read with each tab's space, searched, and restored as one
//! moment.

use std::fs;
use std::path::{Path, PathBuf};

use ffsession_gen::{mozlz4, zen_files, ZenFiles, ZenSpec};

use crate::common::Run;
use crate::common::*;

/// Moment A and, an hour later, moment B, when the first space is renamed.
const A: u64 = 1_790_000_000_000;
const B: u64 = A + 3_600_000;

fn moment(at: u64, tag: &str, first_space: &str) -> ZenFiles {
    let mut spec = ZenSpec {
        last_collected: at,
        tag: tag.to_owned(),
        ..ZenSpec::default()
    };
    spec.spaces[0].1 = first_space.to_owned();
    let mut files = zen_files(&spec);
    // With window sync, Zen's file also holds the tabs of other windows:
    // one tab only Zen's file has.
    let mut zen: serde_json::Value = serde_json::from_str(&files.zen_sessions).unwrap();
    let only = serde_json::json!({
        "entries": [{"url": format!("https://only-in-zen.example/{tag}"),
                     "title": format!("Only in Zen {tag}")}],
        "index": 1, "pinned": false, "zenWorkspace": spec.spaces[1].0, "zenEssential": null
    });
    zen["tabs"].as_array_mut().unwrap().push(only);
    files.zen_sessions = zen.to_string();
    files
}

/// Write one moment's files into the profile, as Zen and Firefox write
/// them at a save: Zen's file of the moment before becomes `clean.jsonlz4`.
fn write_moment(profile: &Path, files: &ZenFiles, before: Option<&ZenFiles>) {
    let write = |name: &str, json: &str| {
        let path = profile.join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, mozlz4(json.as_bytes())).unwrap();
    };
    write("sessionstore.jsonlz4", &files.sessionstore);
    write("zen-sessions.jsonlz4", &files.zen_sessions);
    if let Some(before) = before {
        write("zen-sessions-backup/clean.jsonlz4", &before.zen_sessions);
        write("zen-sessions-backup/recovery.baklz4", &before.zen_sessions);
    }
}

/// The default profile of `profiles.ini`, a Zen profile holding moment A
/// and older copies of Zen's file in `zen-sessions-backup/`.
fn zen_profile(env: &TestEnv) -> (PathBuf, ZenFiles) {
    // Zen's own place (platform.rs), found with no flag.
    let root = ffsession::platform::Platform::CURRENT
        .firefox_roots(&env.folders(), false)
        .into_iter()
        .find(|r| r.browser == "Zen")
        .unwrap()
        .path;
    firefox_profiles(&root, &[("zen", "x1y2.Default (release)", None)], 0);
    let profile = root.join("x1y2.Default (release)");
    let older = moment(A - 1_200_000, "zero", "Work");
    let a = moment(A, "alpha", "Work");
    write_moment(&profile, &a, Some(&older));
    let dated = profile.join("zen-sessions-backup/zen-sessions-2026-09-21-12.jsonlz4");
    fs::write(dated, mozlz4(older.zen_sessions.as_bytes())).unwrap();
    (profile, a)
}

fn json_of(path: &Path) -> String {
    let bytes = fs::read(path).unwrap();
    String::from_utf8(ffsession::format::decompress(&bytes).unwrap()).unwrap()
}

#[test]
fn a_zen_profile_is_backed_up_read_searched_and_restored_as_one_moment() {
    let env = TestEnv::new();
    let (profile, a) = zen_profile(&env);

    // `profiles` lists Zen's files with the others.
    let listed = ok_stdout(env.cmd().arg("profiles"));
    for name in [
        "sessionstore.jsonlz4",
        "zen-sessions.jsonlz4",
        "zen-sessions-backup/clean.jsonlz4",
        "zen-sessions-backup/recovery.baklz4",
        "zen-sessions-backup/zen-sessions-2026-09-21-12.jsonlz4",
    ] {
        assert!(listed.contains(name), "{name} not in:\n{listed}");
    }
    assert!(!listed.contains("UNREADABLE"), "{listed}");
    assert!(
        listed.contains("(Zen's)") && listed.contains("spaces"),
        "{listed}"
    );
    let json = ok_json(env.cmd().args(["profiles", "--json"]));
    assert_eq!(json[0]["browser"], "Zen", "{json}");

    // Backed up, every one verified: Zen's files as Zen's, with their spaces.
    let out = ok_output(env.cmd().arg("backup"));
    assert_eq!(out.status.code(), Some(0), "no alarm: {}", stderr(&out));
    let list = ok_json(env.cmd().args(["list", "--json"]));
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 5);
    assert!(list.iter().all(|s| s["status"] == "ok"), "{list:?}");
    let zen_a = list
        .iter()
        .find(|s| s["file_name"] == "zen-sessions.jsonlz4")
        .unwrap();
    assert_eq!(zen_a["kind"], "zen-sessions");
    assert_eq!(zen_a["counts"]["windows"], 3, "its spaces");
    assert_eq!(zen_a["last_update_ms"], A);
    let text = ok_stdout(env.cmd().arg("list"));
    assert!(text.contains("3 spaces, 12 tabs"), "{text}");
    let session_a = list
        .iter()
        .find(|s| s["file_name"] == "sessionstore.jsonlz4")
        .unwrap()["id"]
        .as_i64()
        .unwrap();

    // An hour later the first space is renamed; Zen copied its old file to
    // clean.jsonlz4 when it saved. Backed up again.
    let b = moment(B, "beta", "Work B");
    write_moment(&profile, &b, Some(&a));
    ok_output(env.cmd().arg("backup"));

    // `tabs` names each tab's space, in text and JSON.
    let text = ok_stdout(env.cmd().arg("tabs"));
    assert!(text.contains("(Work B)\tbeta page"), "{text}");
    assert!(text.contains("[pinned,essential]\t"), "{text}");
    let tabs = ok_json(env.cmd().args(["tabs", "--json"]));
    let tabs = tabs.as_array().unwrap();
    assert_eq!(tabs[2]["space"], "Work B");
    assert_eq!(tabs[5]["space"], "Home \"sweet\" home");
    assert_eq!(tabs[0]["essential"], true);
    assert!(tabs[0]["space"].is_null(), "an essential is in every space");
    // Zen's own file, read by content: its tabs with their spaces, and a summary.
    let zen_file = profile.join("zen-sessions.jsonlz4");
    let tabs = ok_json(env.cmd().arg("tabs").arg(&zen_file).arg("--json"));
    let only = tabs.as_array().unwrap().last().unwrap();
    assert_eq!(only["url"], "https://only-in-zen.example/beta");
    assert_eq!(only["space"], "Home \"sweet\" home");
    let info = ok_stdout(env.cmd().arg("info").arg(&zen_file));
    assert!(
        info.contains(
            "spaces:          3 (Work B: 3 tabs, Home \"sweet\" home: 4 tabs, Research: 3 tabs)"
        ),
        "{info}"
    );
    assert!(
        info.contains("tabs:            12 (5 pinned, 2 essential"),
        "{info}"
    );
    let info = ok_json(env.cmd().arg("info").arg(&zen_file).arg("--json"));
    assert_eq!(info["zen"]["spaces"], 3);
    assert_eq!(info["last_update"], B);

    // `search` finds the tabs of Zen's files, the one only Zen has too (of
    // each moment backed up: the older copies, A and B).
    let hits = ok_json(env.cmd().args(["search", "only-in-zen", "--json"]));
    let hits = hits.as_array().unwrap();
    assert_eq!(hits.len(), 3, "{hits:?}");
    let newest = hits
        .iter()
        .find(|h| h["url"] == "https://only-in-zen.example/beta")
        .unwrap()["newest_snapshot"]
        .as_i64()
        .unwrap();
    let list = ok_json(env.cmd().args(["list", "--json"]));
    let by_id = |id: i64| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .unwrap()
            .clone()
    };
    assert_eq!(by_id(newest)["file_name"], "zen-sessions.jsonlz4");

    // Restoring moment A writes both of its files, the plan naming both.
    let plan = ok_stdout(
        env.cmd()
            .args(["restore", &session_a.to_string(), "--dry-run"]),
    );
    let zen_line = plan
        .lines()
        .position(|l| l.contains("would write") && l.contains("zen-sessions.jsonlz4"))
        .unwrap_or_else(|| panic!("{plan}"));
    let session_line = plan
        .lines()
        .position(|l| l.contains("would write") && l.ends_with("sessionstore.jsonlz4"))
        .unwrap_or_else(|| panic!("{plan}"));
    assert!(zen_line < session_line, "Zen's file first:\n{plan}");
    assert_eq!(
        json_of(&zen_file),
        b.zen_sessions,
        "a dry run changes nothing"
    );

    // Not while the browser runs: refused, neither file changed.
    {
        let _browser = ffsession_gen::FirefoxLockHolder::hold(&profile);
        let err = expect_error(env.cmd().args(["restore", &session_a.to_string()]));
        assert!(err.contains("running on this profile"), "{err}");
    }
    assert_eq!(json_of(&zen_file), b.zen_sessions);
    assert_eq!(
        json_of(&profile.join("sessionstore.jsonlz4")),
        b.sessionstore
    );

    let done = ok_stdout(env.cmd().args(["restore", &session_a.to_string()]));
    assert_eq!(
        json_of(&profile.join("sessionstore.jsonlz4")),
        a.sessionstore,
        "Firefox's session of moment A"
    );
    assert_eq!(json_of(&zen_file), a.zen_sessions, "Zen's file of moment A");
    // The tabs now show moment A's space names.
    let text = ok_stdout(env.cmd().arg("tabs"));
    assert!(text.contains("(Work)\talpha page"), "{text}");

    // Undone as it says, by restoring the session that was current (never
    // Zen's file, collected after it): moment B, both files.
    let undo = undo_id(&done);
    ok_output(env.cmd().args(["restore", &undo]));
    assert_eq!(
        json_of(&profile.join("sessionstore.jsonlz4")),
        b.sessionstore
    );
    assert_eq!(json_of(&zen_file), b.zen_sessions);
}

#[test]
fn zens_file_alone_is_not_restored_as_a_firefox_session() {
    let env = TestEnv::new();
    let (profile, _) = zen_profile(&env);
    ok_output(env.cmd().arg("backup"));
    let list = ok_json(env.cmd().args(["list", "--json"]));
    let zen = list
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["kind"] == "zen-sessions")
        .unwrap()["id"]
        .to_string();
    let err = expect_error(env.cmd().args(["restore", &zen]));
    assert!(err.contains("Zen's sessions file"), "{err}");
    let err = expect_error(
        env.cmd()
            .arg("restore")
            .arg(profile.join("zen-sessions.jsonlz4")),
    );
    assert!(err.contains("Zen's sessions file"), "{err}");
    // `tidy` reads Firefox's session, never Zen's newer file.
    let tidy = ok_stdout(env.cmd().arg("tidy"));
    assert!(tidy.contains("sessionstore.jsonlz4: 11 tabs"), "{tidy}");
    // `restore latest` is Firefox's session, Zen's newer file with it.
    let plan = ok_stdout(env.cmd().args(["restore", "latest", "--dry-run"]));
    assert_contains_all(
        &plan,
        &[
            "sessionstore.jsonlz4  ",
            "would write",
            "zen-sessions.jsonlz4 (Zen's",
        ],
    );
}

/// Zen's own sessions file is a valid file for `decompress` and `compress`
/// too, as it is for `info` and `tabs` (issue 46: it was called damaged).
#[test]
fn decompress_and_compress_take_zens_own_sessions_file() {
    let env = TestEnv::new();
    let files = zen_files(&ZenSpec::default());
    let packed = env.path().join("zen-sessions.jsonlz4");
    fs::write(&packed, mozlz4(files.zen_sessions.as_bytes())).unwrap();
    let out = crate::common::ok_output(env.cmd().arg("decompress").arg(&packed));
    assert_eq!(out.stdout, files.zen_sessions.as_bytes());
    let json = env.path().join("zen.json");
    fs::write(&json, &files.zen_sessions).unwrap();
    let again = env.path().join("again.jsonlz4");
    crate::common::ok_output(env.cmd().arg("compress").arg(&json).arg("-o").arg(&again));
    assert_eq!(
        ffsession::format::decompress(&fs::read(&again).unwrap()).unwrap(),
        files.zen_sessions.as_bytes()
    );
    // Not every JSON object is Zen's: still refused.
    fs::write(&json, "{\"hello\": 1}").unwrap();
    assert!(!env
        .cmd()
        .arg("compress")
        .arg(&json)
        .arg("-o")
        .arg(&again)
        .run()
        .status
        .success());
}
