//! The store stands alone: a store copied to a machine with no Firefox at all
//! is listed, searched, compared, pruned and restored from with --store.

use std::fs;
use std::path::Path;

use crate::common::{
    assert_contains_all, copy_tree, expect_error, ok_json, ok_stdout, seeded_session, session_of,
    tabs_session, undo_id, TestEnv,
};

fn urls(env: &TestEnv, file: &Path) -> String {
    ok_stdout(env.cmd().args(["tabs", "--format", "urls"]).arg(file))
}

#[test]
fn a_copied_store_works_on_a_machine_without_firefox() {
    // The old machine: two backups of a profile.
    let old = TestEnv::new();
    let first = session_of(30, 1_000);
    let profile = old.back_up_recovery(&first.packed);
    let second = seeded_session(25, 2_000, 9);
    old.back_up_recovery(&second.packed);
    let original_urls = urls(&old, &profile.join("sessionstore-backups/recovery.jsonlz4"));

    // The new machine: an empty HOME (no ~/.mozilla at all), the store copied.
    let new = TestEnv::new();
    let store = new.path().join("from-disk/default-release");
    copy_tree(&old.store_dir(), &store);
    let with_store = |args: &[&str]| {
        let mut cmd = new.cmd();
        cmd.arg("--store").arg(&store).args(args);
        cmd
    };
    let list = ok_json(&mut with_store(&["list", "--json"]));
    assert_eq!(list.as_array().unwrap().len(), 2, "{list}");
    ok_stdout(&mut with_store(&["stats"]));
    let hits = ok_json(&mut with_store(&["search", "Page", "--json"]));
    assert!(!hits.as_array().unwrap().is_empty(), "{hits}");
    let diff = ok_json(&mut with_store(&["diff", "1", "2", "--json"]));
    assert!(diff.is_object(), "{diff}");
    let url = hits[0]["url"].as_str().unwrap().to_string();
    let history = ok_json(&mut with_store(&["history", &url, "--json"]));
    assert!(!history.as_array().unwrap().is_empty(), "{history}");
    ok_stdout(&mut with_store(&["prune", "--dry-run"]));
    let check = ok_stdout(&mut with_store(&["check"]));
    assert!(check.contains("no errors were found"), "{check}");

    // The config file's `store` names it just as well, and prune works on it.
    let config = new.path().join("config.toml");
    fs::write(&config, format!("store = {:?}\n", store.to_str().unwrap())).unwrap();
    let mut by_config = new.cmd();
    by_config
        .arg("--config")
        .arg(&config)
        .args(["list", "--json"]);
    assert_eq!(ok_json(&mut by_config).as_array().unwrap().len(), 2);
    let mut pruned = new.cmd();
    pruned
        .arg("--config")
        .arg(&config)
        .args(["prune", "--keep-last", "1"]);
    ok_stdout(&mut pruned);
    let list = ok_json(&mut with_store(&["list", "--json"]));
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");

    // Restore the newest good snapshot into a profile folder that does not
    // exist yet: it is created with what Firefox needs at its next start.
    let target = new.path().join("new-profile");
    let plan = ok_stdout(with_store(&["restore", "latest", "--dry-run", "--profile"]).arg(&target));
    assert!(plan.contains("would create the profile folder"), "{plan}");
    assert!(!target.exists(), "a dry run created the folder");
    let text = ok_stdout(with_store(&["restore", "latest", "--profile"]).arg(&target));
    assert!(text.contains("firefox -profile"), "{text}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            fs::metadata(&target).unwrap().permissions().mode() & 0o777,
            0o700
        );
    }
    assert_eq!(
        urls(&new, &target.join("sessionstore.jsonlz4")),
        original_urls
    );
    let prefs = fs::read_to_string(target.join("prefs.js")).unwrap();
    assert_contains_all(
        &prefs,
        &["browser.sessionstore.resume_session_once\", true"],
    );
}

#[test]
fn without_a_profile_or_a_store_the_error_points_at_stores() {
    let env = TestEnv::new();
    for cmd in ["list", "search", "stats"] {
        let mut c = env.cmd();
        c.arg(cmd);
        if cmd == "search" {
            c.arg("x");
        }
        let err = expect_error(&mut c);
        assert!(
            err.contains("--store DIR") && err.contains("ffsession stores"),
            "{cmd}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

#[test]
fn stores_lists_the_stores_of_the_data_directory() {
    let env = TestEnv::new();
    let g = tabs_session(5);
    let profile = env.profile_with_recovery(&g.packed);
    // The default store: <data dir>/ffsession/<profile name>.
    ok_stdout(env.cmd().arg("--profile").arg(&profile).arg("backup"));
    let rows = ok_json(env.cmd().args(["stores", "--json"]));
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["name"], "profile");
    assert_eq!(rows[0]["snapshots"], 1);
    let text = ok_stdout(env.cmd().arg("stores"));
    assert!(
        text.contains("1 snapshots") || text.contains("     1 snapshots"),
        "{text}"
    );
    assert!(text.contains("ffsession --store"), "{text}");
    // An empty folder: said so, not an error.
    let empty = env.path().join("nothing");
    fs::create_dir_all(&empty).unwrap();
    assert!(ok_stdout(env.cmd().arg("stores").arg(&empty)).contains("no backup stores"));
}

#[test]
fn restore_accepts_a_session_file_and_can_be_undone() {
    let env = TestEnv::new();
    let current = session_of(9, 1_000);
    let profile = env.profile_with_recovery(&current.packed);
    let other = seeded_session(4, 5_000, 3);
    let file = env.write("extracted.jsonlz4", &other.packed);
    let dry = ok_stdout(
        env.store_cmd(&profile)
            .args(["restore", "--dry-run"])
            .arg(&file),
    );
    assert!(dry.contains("would store it as a snapshot"), "{dry}");
    assert!(!env.store_dir().exists(), "a dry run stored something");
    let text = ok_stdout(env.store_cmd(&profile).arg("restore").arg(&file));
    assert!(text.contains("stored ") && text.contains("done:"), "{text}");
    assert_eq!(
        urls(&env, &profile.join("sessionstore.jsonlz4")),
        urls(&env, &file)
    );
    let undo = undo_id(&text);
    ok_stdout(env.store_cmd(&profile).args(["restore", &undo]));
    assert_eq!(
        urls(&env, &profile.join("sessionstore.jsonlz4")),
        urls(&env, &env.write("cur.jsonlz4", &current.packed))
    );
    // A file with no tabs is refused, nothing written.
    let empty = env.write("empty.json", br#"{"windows":[]}"#);
    let err = expect_error(env.store_cmd(&profile).arg("restore").arg(&empty));
    assert!(err.contains("no window with tabs"), "{err}");
}

#[test]
fn restoring_a_file_into_a_new_profile_folder_creates_it_and_keeps_the_file_in_its_store() {
    let env = TestEnv::new();
    // A default profile with a backup in its own store.
    let root = env.firefox_root();
    let default = root.join("Profiles/abc.default-release");
    fs::create_dir_all(default.join("sessionstore-backups")).unwrap();
    fs::write(
        root.join("profiles.ini"),
        "[Profile0]\nName=default-release\nIsRelative=1\nPath=Profiles/abc.default-release\nDefault=1\n",
    )
    .unwrap();
    let current = session_of(12, 1_795_000_000_000);
    fs::write(
        default.join("sessionstore-backups/recovery.jsonlz4"),
        &current.packed,
    )
    .unwrap();
    ok_stdout(env.cmd().arg("backup"));
    let default_list = || ok_json(env.cmd().args(["list", "--json"]));
    let before = default_list();
    assert_eq!(before.as_array().unwrap().len(), 1, "{before}");

    // A rescued file, restored into a folder that does not exist yet.
    let rescued = seeded_session(4, 1_796_000_000_000, 3);
    let file = env.write("rescued.jsonlz4", &rescued.packed);
    let target = env.path().join("new-profile");
    let plan = ok_stdout(
        env.cmd()
            .arg("restore")
            .arg(&file)
            .arg("--dry-run")
            .arg("--profile")
            .arg(&target),
    );
    assert!(plan.contains("would create the profile folder"), "{plan}");
    assert!(!target.exists());
    let text = ok_stdout(
        env.cmd()
            .arg("restore")
            .arg(&file)
            .arg("--profile")
            .arg(&target),
    );
    assert!(text.contains("will create the profile folder"), "{text}");
    assert!(text.contains("firefox -profile"), "{text}");
    assert_eq!(
        urls(&env, &target.join("sessionstore.jsonlz4")),
        urls(&env, &file)
    );
    // It is kept in the new profile's store, which the output names, and the
    // default profile's store is as it was.
    let own = ok_json(
        env.cmd()
            .arg("--profile")
            .arg(&target)
            .args(["list", "--json"]),
    );
    let own = own.as_array().unwrap();
    assert_eq!(own.len(), 1, "{own:?}");
    assert_eq!(own[0]["counts"]["tabs"], 4, "{own:?}");
    let store = env.stores_root().join("new-profile");
    assert!(
        text.contains(&format!(
            "as snapshot {} in {}",
            own[0]["id"],
            store.display()
        )),
        "{text}"
    );
    assert_eq!(default_list(), before);

    // A snapshot id into another new folder needs the store that holds it.
    let err = expect_error(
        env.cmd()
            .args(["restore", "1", "--profile"])
            .arg(env.path().join("other-new")),
    );
    assert!(
        err.contains("new profile folder") && err.contains("--store DIR"),
        "{err}"
    );
    assert!(!env.path().join("other-new").exists());
}
