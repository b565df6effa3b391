//! Reaching outside its folders: links in the store, links and foreign files
//! in the profile, names that would write to the terminal, and the store's
//! small hygiene (modes, orphan chunks, a store without its catalog).
#![cfg(unix)]

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};

use crate::common::{chunk_files, ok_output, packed, stderr, stdout_json, Run, TestEnv};

const NOW: u64 = 1_795_400_000_000;

#[test]
fn a_linked_lock_in_the_store_is_refused_and_check_names_it() {
    let env = TestEnv::new();
    let profile = env.back_up_recovery(&packed(5, NOW));
    let victim = env.write("victim.txt", b"precious\n");
    fs::set_permissions(&victim, fs::Permissions::from_mode(0o644)).unwrap();
    let lock = env.store_dir().join("lock");
    fs::remove_file(&lock).unwrap();
    symlink(&victim, &lock).unwrap();

    let out = env.store_cmd(&profile).arg("backup").run();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&*lock.to_string_lossy()) && err.contains("symbolic link"),
        "{err}"
    );
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(
        fs::metadata(&victim).unwrap().permissions().mode() & 0o777,
        0o644
    );

    let out = env.store_cmd(&profile).arg("check").run();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(5), "{text}{}", stderr(&out));
    assert!(
        text.contains(&format!(
            "error: {}: the lock is a symbolic link",
            lock.display()
        )),
        "{text}"
    );
    // Reading needs no lock.
    let list = env.store_cmd(&profile).arg("list").run();
    assert!(list.status.success(), "{}", stderr(&list));
}

/// A store folder that is itself a symbolic link is refused by `backup`
/// (nothing written into the link's target), as `check` calls it damage;
/// `link/` and `link/.` too.
#[test]
fn a_store_folder_that_is_a_symbolic_link_is_refused_by_backup() {
    let env = TestEnv::new();
    let profile = env.profile_with_recovery(&packed(5, NOW));
    let real = env.path().join("real");
    fs::create_dir(&real).unwrap();
    let link = env.path().join("link");
    symlink(&real, &link).unwrap();
    for given in [link.clone(), link.join(""), link.join(".")] {
        let out = env.store_cmd_at(&profile, &given).arg("backup").run();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{}: {err}", given.display());
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("the store folder is a symbolic link"), "{err}");
        assert!(err.contains("real folder's path"), "{err}");
        assert_eq!(
            fs::read_dir(&real).unwrap().count(),
            0,
            "written through the link"
        );
    }
    // A store made at the real path is refused through the link too, and
    // check says why.
    ok_output(env.store_cmd_at(&profile, &real).arg("backup"));
    let out = env.store_cmd_at(&profile, &link).arg("list").run();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let out = env.store_cmd_at(&profile, &link).arg("check").run();
    assert_eq!(out.status.code(), Some(5));
    assert!(String::from_utf8_lossy(&out.stdout).contains("symbolic link"));
}

/// The file names `list --json` shows.
fn stored_names(env: &TestEnv, profile: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = env
        .list_snapshots(profile)
        .iter()
        .map(|s| s["file_name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn backup_follows_no_link_out_of_the_profile_and_says_what_it_skipped() {
    let env = TestEnv::new();
    let profile = env.profile_with(&[("sessionstore.jsonlz4", &packed(5, NOW))]);
    // A sessionstore-backups/ that is a link to a folder of secrets.
    let etc = env.path().join("etc");
    fs::create_dir(&etc).unwrap();
    fs::write(etc.join("shadow"), b"root:$6$secret:19000::::::\n").unwrap();
    fs::write(etc.join("recovery.jsonlz4"), packed(6, NOW)).unwrap();
    symlink(&etc, profile.join("sessionstore-backups")).unwrap();

    let out = ok_output(env.store_cmd(&profile).args(["backup", "--json"]));
    let err = stderr(&out);
    let link = profile.join("sessionstore-backups");
    assert!(
        err.contains(&format!(
            "ffsession: warning: skipped {}: a symbolic link (to {})",
            link.display(),
            etc.display()
        )),
        "{err}"
    );
    let report = stdout_json(&out);
    assert_eq!(report["skipped"][0]["name"], "sessionstore-backups");
    assert_eq!(report["skipped"][0]["reason"], "symbolic-link");
    assert_eq!(stored_names(&env, &profile), ["sessionstore.jsonlz4"]);

    // In a real folder: a linked session file, a file of another name.
    fs::remove_file(&link).unwrap();
    fs::create_dir(&link).unwrap();
    symlink(etc.join("shadow"), link.join("recovery.jsonlz4")).unwrap();
    fs::write(link.join("shadow"), b"root:$6$secret:19000::::::\n").unwrap();
    fs::write(link.join("previous.jsonlz4"), packed(7, NOW)).unwrap();
    let out = ok_output(env.store_cmd(&profile).arg("backup"));
    let err = stderr(&out);
    assert!(err.contains("recovery.jsonlz4: a symbolic link"), "{err}");
    assert!(
        err.contains("shadow: not a name Firefox gives a session file"),
        "{err}"
    );
    assert_eq!(
        stored_names(&env, &profile),
        [
            "sessionstore-backups/previous.jsonlz4",
            "sessionstore.jsonlz4"
        ]
    );
    let store = ffsession::store::Store::open_read_only(env.store_dir()).unwrap();
    for s in store.snapshots().unwrap() {
        let content = store.read_content(s.id).unwrap();
        assert!(!String::from_utf8_lossy(&content).contains("secret"));
    }
}

#[test]
fn a_link_that_cannot_be_read_does_not_fail_the_backup_nor_stop_watch() {
    let env = TestEnv::new();
    let profile = env.profile_with_recovery(&packed(5, NOW));
    // A link to itself: following it fails (ELOOP), as an unreadable target would.
    symlink(
        "recovery.baklz4",
        profile.join("sessionstore-backups/recovery.baklz4"),
    )
    .unwrap();
    let out = ok_output(env.store_cmd(&profile).arg("backup"));
    assert!(stderr(&out).contains("recovery.baklz4: a symbolic link"));
    assert_eq!(
        stored_names(&env, &profile),
        ["sessionstore-backups/recovery.jsonlz4"]
    );

    let child = env.watch_cmd(&profile).spawn().unwrap();
    crate::common::replace_recovery(&profile, &packed(9, NOW + 1));
    let mut tabs = 0;
    for _ in 0..150 {
        if let Some(s) = env.list_snapshots(&profile).first() {
            tabs = s["counts"]["tabs"].as_u64().unwrap_or(0);
            if tabs == 9 {
                break;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "watch ended: {}", stderr(&out));
    assert_eq!(tabs, 9, "watch did not back up the new file");
    let err = stderr(&out);
    assert_eq!(
        err.matches("recovery.baklz4: a symbolic link").count(),
        1,
        "said once while it lasts: {err}"
    );
}

#[test]
fn a_live_pid_in_the_lock_symlink_means_firefox_runs_despite_a_free_parentlock() {
    let env = TestEnv::new();
    let profile = env.back_up_recovery(&packed(5, NOW));
    // What ffsession's own restore leaves: a .parentlock nobody holds.
    fs::write(profile.join(".parentlock"), b"").unwrap();
    // A live process (this test) named in the lock symlink, as Firefox writes it.
    let pid = std::process::id();
    symlink(format!("127.0.1.1:+{pid}"), profile.join("lock")).unwrap();

    let json = crate::common::ok_json(env.store_cmd(&profile).args(["profiles", "--json"]));
    assert_eq!(json[0]["lock"]["state"], "running", "{json}");
    assert_eq!(json[0]["lock"]["pid"], pid);
    let before = fs::read(profile.join("sessionstore-backups/recovery.jsonlz4")).unwrap();
    let out = env.store_cmd(&profile).args(["restore", "1"]).run();
    let err = stderr(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "restored while Firefox runs: {err}"
    );
    assert!(err.contains(&pid.to_string()), "{err}");
    assert_eq!(
        fs::read(profile.join("sessionstore-backups/recovery.jsonlz4")).unwrap(),
        before
    );
}

/// No byte that acts on a terminal (escape, bell, carriage return, ...):
/// only printable text and the newlines that end lines.
fn assert_terminal_safe(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    assert!(
        !text
            .chars()
            .any(|c| (c.is_control() && c != '\n') || c == '\u{202e}'),
        "{what} holds raw control characters: {text:?}"
    );
}

#[test]
fn names_that_would_act_on_the_terminal_are_escaped_in_text_and_exact_in_json() {
    let env = TestEnv::new();
    let profile = env.path().join("pro\nfile\u{1b}[31m");
    let backups = profile.join("sessionstore-backups");
    fs::create_dir_all(&backups).unwrap();
    fs::write(backups.join("recovery.jsonlz4"), packed(5, NOW)).unwrap();
    fs::write(backups.join("evil\u{1b}]0;pwned\u{7}.jsonlz4"), b"x").unwrap();
    fs::write(backups.join("line\nbreak\u{202e}"), b"x").unwrap();
    {
        use std::os::unix::ffi::OsStrExt;
        let name = std::ffi::OsStr::from_bytes(b"recovery\xff.jsonlz4");
        fs::write(backups.join(name), b"x").unwrap();
    }
    // A snapshot whose file name holds a newline, as an older ffsession
    // could record one.
    {
        let mut store = ffsession::store::Store::create_or_open(env.store_dir()).unwrap();
        store
            .add_snapshots(
                vec![ffsession::store::SnapshotSource {
                    bytes: packed(3, NOW),
                    profile: "p".into(),
                    file_name: "sessionstore-backups/a\nb\u{1b}[2J".into(),
                    kind: ffsession::sources::SourceKind::Other,
                    mtime_ms: None,
                }],
                NOW,
            )
            .unwrap();
    }

    let out = ok_output(env.store_cmd(&profile).arg("backup"));
    assert_terminal_safe("backup stdout", &out.stdout);
    assert_terminal_safe("backup stderr", &out.stderr);
    let err = stderr(&out);
    assert!(err.contains(r"pro\nfile\u{1b}[31m"), "{err}");
    assert!(
        err.contains(r"evil\u{1b}]0;pwned\u{7}.jsonlz4: not a name"),
        "{err}"
    );
    assert!(err.contains(r"line\nbreak\u{202e}: not a name"), "{err}");
    // The name that is not UTF-8 is said, not skipped without a word.
    assert!(
        err.contains(r"recovery\xff.jsonlz4: its name is not valid UTF-8"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 3, "{err}");

    let list = ok_output(env.store_cmd(&profile).arg("list"));
    assert_terminal_safe("list", &list.stdout);
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(text.contains(r" a\nb\u{1b}[2J "), "{text}");
    assert_eq!(text.lines().count(), 2, "{text}");
    let long = ok_output(env.store_cmd(&profile).args(["list", "--long"]));
    assert_terminal_safe("list --long", &long.stdout);
    let text = String::from_utf8_lossy(&long.stdout);
    assert!(
        text.contains(r"sessionstore-backups/a\nb\u{1b}[2J"),
        "{text}"
    );
    // JSON prints names exactly.
    let json = crate::common::ok_json(env.store_cmd(&profile).args(["list", "--json"]));
    assert!(json
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["file_name"] == "sessionstore-backups/a\nb\u{1b}[2J"));

    let profiles = ok_output(env.store_cmd(&profile).arg("profiles"));
    assert_terminal_safe("profiles", &profiles.stdout);
    let text = String::from_utf8_lossy(&profiles.stdout);
    assert!(text.contains(r"pro\nfile\u{1b}[31m"), "{text}");
    assert!(text.contains(r"evil\u{1b}]0;pwned\u{7}.jsonlz4"), "{text}");

    for args in [&["check"][..], &["prune", "--dry-run"]] {
        let out = env.store_cmd(&profile).args(args).run();
        assert_terminal_safe(args[0], &out.stdout);
        assert_terminal_safe(args[0], &out.stderr);
    }

    let root = env.path().join("stores");
    drop(ffsession::store::Store::create_or_open(root.join("s\u{1b}[8m")).unwrap());
    let out = ok_output(env.cmd().arg("stores").arg(&root));
    assert_terminal_safe("stores", &out.stdout);
    assert!(String::from_utf8_lossy(&out.stdout).contains(r"s\u{1b}[8m"));
}

#[test]
fn world_writable_chunk_files_are_made_private_by_the_next_backup_as_check_says() {
    let env = TestEnv::new();
    let profile = env.back_up_recovery(&packed(40, NOW));
    for f in chunk_files(&env.store_dir()) {
        fs::set_permissions(&f, fs::Permissions::from_mode(0o666)).unwrap();
    }
    let out = env.store_cmd(&profile).arg("check").run();
    assert_eq!(out.status.code(), Some(5));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("the next backup makes it 0600"), "{text}");
    assert!(text.contains("chmod -R go-rwx"), "{text}");
    assert!(
        stderr(&out).contains("anyone may write to (the next backup makes them private)"),
        "{}",
        stderr(&out)
    );
    // What check promised.
    ok_output(env.store_cmd(&profile).arg("backup"));
    for f in chunk_files(&env.store_dir()) {
        assert_eq!(
            fs::metadata(&f).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    let out = ok_output(env.store_cmd(&profile).arg("check"));
    assert!(String::from_utf8_lossy(&out.stdout).contains("no errors were found"));
}

#[test]
fn stores_lists_a_store_whose_catalog_is_missing() {
    let env = TestEnv::new();
    let root = env.path().join("stores");
    for name in ["a-whole", "b-lost"] {
        let profile = env.profile_with_recovery(&packed(3, NOW));
        ok_output(env.store_cmd_at(&profile, &root.join(name)).arg("backup"));
    }
    fs::remove_file(root.join("b-lost/catalog.sqlite")).unwrap();
    for suffix in ["-wal", "-shm"] {
        let _ = fs::remove_file(root.join(format!("b-lost/catalog.sqlite{suffix}")));
    }
    // Not a store: a folder of something else.
    fs::create_dir_all(root.join("c-other")).unwrap();
    fs::write(root.join("c-other/notes.txt"), b"x").unwrap();

    let out = ok_output(env.cmd().arg("stores").arg(&root));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("a-whole"), "{text}");
    assert!(
        text.contains("b-lost") && text.contains("CATALOG MISSING"),
        "{text}"
    );
    assert!(!text.contains("c-other"), "{text}");
    assert!(
        text.contains("ffsession --store") && text.contains("a-whole list"),
        "{text}"
    );
    let json = crate::common::ok_json(env.cmd().args(["stores", "--json"]).arg(&root));
    let rows = json.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{json}");
    assert_eq!(rows[1]["name"], "b-lost");
    assert_eq!(rows[1]["catalog_missing"], true);
    assert!(rows[1]["error"].is_string());
    assert_eq!(rows[0]["catalog_missing"], false);
}
