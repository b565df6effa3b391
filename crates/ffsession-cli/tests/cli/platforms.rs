//! What differs between platforms, checked on each: titles in any script
//! through a pipe, and a store and a profile under a long path with
//! non-ASCII names (on Windows longer than MAX_PATH, 260 characters).

use std::fs;
use std::path::PathBuf;

use ffsession_gen::mozlz4;

use crate::common::{ok_output, ok_stdout, stdout_json, TestEnv};

/// Titles in scripts a console's code page may lack.
const TITLES: [&str; 3] = [
    "🦊 Firefox — the fox 🦊",
    "日本語のページ · 中文页面 · 한국어",
    "Ünïcödé ç'est l'été: αβγ, Ж, עברית",
];

/// A session whose tabs are titled [`TITLES`].
fn session_with_titles() -> Vec<u8> {
    let tabs: Vec<serde_json::Value> = TITLES
        .iter()
        .enumerate()
        .map(|(i, title)| {
            serde_json::json!({
                "entries": [{"url": format!("https://example.org/{i}"), "title": title}],
                "index": 1
            })
        })
        .collect();
    let session = serde_json::json!({"windows": [{"tabs": tabs}], "session": {"lastUpdate": 1_795_000_000_000u64}});
    mozlz4(session.to_string().as_bytes())
}

/// Through a pipe the output is UTF-8 on every platform, whatever the
/// console's code page (on a Windows console, Rust writes UTF-16 to the
/// console itself, which shows every script its font has).
#[test]
fn titles_in_any_script_come_out_as_utf8() {
    let env = TestEnv::new();
    let file = env.write("Zoë 日本/session.jsonlz4", &session_with_titles());
    let out = ok_output(env.cmd().arg("tabs").arg(&file));
    let text = std::str::from_utf8(&out.stdout).expect("UTF-8 output");
    for title in TITLES {
        assert!(text.contains(title), "{title} missing from {text}");
    }
    let json = ok_output(env.cmd().args(["tabs", "--json"]).arg(&file));
    let titles: Vec<String> = stdout_json(&json)
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["title"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(titles, TITLES);
}

/// A folder name of non-ASCII letters (as a Windows user name may be), then
/// folders enough to pass 260 characters, Windows' old MAX_PATH.
fn long_path(env: &TestEnv) -> PathBuf {
    let mut dir = env.path().join("Jörg Ølsen 日本");
    while dir.as_os_str().len() < 300 {
        dir.push("a folder name of thirty-two ch");
    }
    dir
}

/// Backup, list, check, search and restore with the profile and the store
/// under such a path (std turns long paths into `\\?\` ones on Windows; the
/// store hands SQLite its catalog the same way).
#[test]
fn a_profile_and_a_store_under_a_long_non_ascii_path_work() {
    let env = TestEnv::new();
    let base = long_path(&env);
    assert!(base.as_os_str().len() > 260);
    let profile = base.join("profile");
    let store = base.join("store");
    let backups = profile.join("sessionstore-backups");
    fs::create_dir_all(&backups).unwrap();
    fs::write(backups.join("recovery.jsonlz4"), session_with_titles()).unwrap();
    let run = |args: &[&str]| {
        let mut cmd = env.cmd();
        cmd.arg("--profile")
            .arg(&profile)
            .arg("--store")
            .arg(&store)
            .args(args);
        cmd
    };
    ok_output(&mut run(&["backup"]));
    let list = stdout_json(&ok_output(&mut run(&["list", "--json"])));
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    let check = ok_stdout(&mut run(&["check"]));
    assert!(check.contains("no errors were found"), "{check}");
    let hits = stdout_json(&ok_output(&mut run(&[
        "search",
        "--json",
        "日本語のページ",
    ])));
    assert_eq!(hits.as_array().unwrap().len(), 1, "{hits}");
    fs::remove_file(backups.join("recovery.jsonlz4")).unwrap();
    let restored = ok_stdout(&mut run(&["restore", "1"]));
    assert!(restored.contains("done"), "{restored}");
    assert!(profile.join("sessionstore.jsonlz4").is_file());
}
