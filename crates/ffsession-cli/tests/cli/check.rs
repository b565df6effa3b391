//! `ffsession check`, and what `restore` and `backup` do with a damaged store.

use std::fs;
use std::path::{Path, PathBuf};

use crate::common::{
    chunk_files, ok_json, ok_stdout, packed, printed_command, stderr, stdout_json, Run, TestEnv,
};

/// The files of `profile` and their bytes.
fn snapshot_of(profile: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut dirs = vec![profile.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                out.push((p.clone(), fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn check_a_whole_store_then_a_flipped_bit_then_the_heal() {
    let env = TestEnv::new();
    let profile = env.back_up_recovery(&packed(60, 1_795_400_000_000));
    let out = ok_stdout(env.store_cmd(&profile).arg("check"));
    assert!(out.contains("no errors were found"), "{out}");
    let json = ok_json(env.store_cmd(&profile).args(["check", "--json"]));
    assert!(json["damaged_snapshots"].as_array().unwrap().is_empty());
    assert!(json["chunks"].as_u64().unwrap() > 0);

    let victim = chunk_files(&env.store_dir())[1].clone();
    let mut bytes = fs::read(&victim).unwrap();
    let i = bytes.len() / 2;
    bytes[i] ^= 0x01;
    fs::write(&victim, bytes).unwrap();

    let out = env.store_cmd(&profile).arg("check").run();
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(text.contains("damaged: snapshot #1 "), "{text}");
    assert!(text.contains("recovery.jsonlz4"), "{text}");
    assert!(text.contains(&*victim.to_string_lossy()), "{text}");
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("1 snapshot cannot be restored"));

    // Restore refuses in one line and leaves the profile as it was.
    let before = snapshot_of(&profile);
    let out = env.store_cmd(&profile).args(["restore", "1"]).run();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("damaged"), "{}", stderr(&out));
    assert!(out.stdout.is_empty(), "no plan for a damaged snapshot");
    assert_eq!(snapshot_of(&profile), before);

    // The next backup of the same session rewrites the chunk: not "+0 B".
    let out = ok_stdout(env.store_cmd(&profile).arg("backup"));
    assert!(!out.contains("+0 B"), "{out}");
    let out = ok_stdout(env.store_cmd(&profile).arg("check"));
    assert!(out.contains("no errors were found"), "{out}");
    let restored = ok_stdout(env.store_cmd(&profile).args(["restore", "1"]));
    assert!(restored.contains("done"), "{restored}");
}

#[test]
#[cfg_attr(windows, ignore = "needs a junction, which Wine 8 cannot make")]
fn check_names_a_linked_store_folder() {
    let env = TestEnv::new();
    let profile = env.back_up_recovery(&packed(20, 1_795_400_000_000));
    let link = env.path().join("link");
    ffsession_gen::link_dir(&env.store_dir(), &link);
    let out = env.store_cmd_at(&profile, &link).arg("check").run();
    assert_eq!(out.status.code(), Some(5));
    assert!(String::from_utf8_lossy(&out.stdout).contains("symbolic link"));
}

#[test]
fn check_names_a_missing_catalog() {
    let env = TestEnv::new();
    let profile = env.back_up_recovery(&packed(20, 1_795_400_000_000));
    fs::remove_file(env.store_dir().join("catalog.sqlite")).unwrap();
    let out = env.store_cmd(&profile).arg("check").run();
    assert_eq!(out.status.code(), Some(5));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("the catalog is missing"), "{text}");
    // What to do, for this store (the harness runs it as printed).
    let rebuild = printed_command(&text, "reindex").expect(&text);
    assert!(
        rebuild.ends_with(&["reindex".into(), "--catalog".into()]),
        "{text}"
    );
    assert!(rebuild.iter().any(|w| w == "--store"), "{text}");
    let json = stdout_json(&env.store_cmd(&profile).args(["check", "--json"]).run());
    assert_eq!(
        json["problems"][0]["what"], "the catalog is missing",
        "{json}"
    );
    assert_eq!(json["problems"][0]["hint"], "RebuildCatalog", "{json}");
    // Nothing was deleted: the chunk files are all still there.
    assert!(!chunk_files(&env.store_dir()).is_empty());
}

/// A damaged tab index (derived data): `check` names it and what builds it
/// again, for this store; the next `backup` builds it again and says so.
#[test]
fn a_damaged_tab_index_is_named_with_what_builds_it_again() {
    let env = TestEnv::new();
    let profile = env.back_up_recovery(&packed(20, 1_795_400_000_000));
    let index = env.store_dir().join("index.sqlite");
    assert!(index.is_file());
    fs::write(&index, vec![0x5a; 8192]).unwrap();
    let out = env.store_cmd(&profile).arg("check").run();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("the tab index is derived data"), "{text}");
    let reindex = printed_command(&text, "reindex").expect(&text);
    assert_eq!(reindex.last().unwrap(), "reindex", "{text}");
    assert!(reindex.iter().any(|w| w == "--profile"), "{text}");

    let out = env.store_cmd(&profile).arg("backup").run();
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("warning:") && err.contains("index.sqlite: the tab index was damaged"),
        "{err}"
    );
    // Built again: the next check finds it whole.
    let out = ok_stdout(env.store_cmd(&profile).arg("check"));
    assert!(out.contains("no errors were found"), "{out}");
}

#[test]
fn a_lost_catalog_is_not_replaced_by_an_empty_one() {
    // A new catalog would list none of the chunks, and the next prune would
    // delete them all as unused: backup, watch's writers and prune refuse.
    let env = TestEnv::new();
    let profile = env.back_up_recovery(&packed(20, 1_795_400_000_000));
    let chunks = chunk_files(&env.store_dir());
    assert!(!chunks.is_empty());
    let catalog = env.store_dir().join("catalog.sqlite");
    for lose in [
        |p: &Path| fs::remove_file(p).unwrap(),
        |p: &Path| fs::write(p, b"").unwrap(),
    ] {
        lose(&catalog);
        for args in [
            &["backup"][..],
            &["prune", "--keep-last", "1"],
            &["tidy", "--drop-closed"],
        ] {
            let out = env.store_cmd(&profile).args(args).run();
            assert!(!out.status.success(), "{args:?}");
            let err = stderr(&out);
            assert!(
                err.contains("catalog.sqlite is missing or empty"),
                "{args:?}: {err}"
            );
            assert!(err.contains("put back catalog.sqlite"), "{args:?}: {err}");
            assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        }
        assert_eq!(chunk_files(&env.store_dir()), chunks);
        assert!(fs::metadata(&catalog).map_or(true, |m| m.len() == 0));
    }
}

#[test]
fn check_of_a_profile_with_no_store_says_no_backups_yet_as_list_does() {
    let env = TestEnv::new();
    crate::common::firefox_profiles(
        &env.firefox_root(),
        &[("default", "p.default", Some(3))],
        1_795_400_000_000,
    );
    let list = crate::common::expect_error(env.cmd().arg("list"));
    assert!(list.contains("no backups yet"), "{list}");
    for args in [&["check"][..], &["check", "--json"]] {
        let out = env.cmd().args(args).run();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err, list, "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}
