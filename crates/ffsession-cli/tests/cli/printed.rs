//! Commands the CLI prints for the person to run next run as printed (issue
//! 46, item 4): the "to undo" line names this run's profile and store,
//! quoted, with absolute paths, and run from another folder it undoes the
//! restore (or the tidy) in that very profile; `firefox -profile` is quoted.

use std::fs;

use crate::common::{ok_output, packed, undo_command, TestEnv};

#[test]
fn to_undo_runs_as_printed_on_the_same_profile_and_store() {
    let env = TestEnv::new();
    // A profile and a store in folders whose names need quoting.
    let profile = env.path().join("Mes profils").join("p 1");
    let store = env.path().join("backups (old)");
    let recovery = profile.join("sessionstore-backups/recovery.jsonlz4");
    fs::create_dir_all(recovery.parent().unwrap()).unwrap();
    let first = packed(3, 1_795_000_000_000);
    fs::write(&recovery, &first).unwrap();
    let here = |c: &mut assert_cmd::Command| {
        c.arg("--profile").arg(&profile).arg("--store").arg(&store);
    };
    let mut backup = env.cmd();
    here(&mut backup);
    ok_output(backup.arg("backup"));
    // Firefox wrote a newer session since; the restore brings back the first.
    let second = packed(7, 1_795_000_100_000);
    fs::write(&recovery, &second).unwrap();
    let mut restore = env.cmd();
    here(&mut restore);
    let out = ok_output(restore.args(["restore", "snapshot:1"]));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let restored = || {
        ffsession::format::decompress(&fs::read(profile.join("sessionstore.jsonlz4")).unwrap())
            .unwrap()
    };
    assert_eq!(restored(), ffsession::format::decompress(&first).unwrap());

    // The undo, run as printed from another folder, puts the second back in
    // this profile.
    let undo = undo_command(&text);
    assert!(undo.iter().any(|w| w == "--profile"), "{text}");
    assert!(undo.iter().any(|w| w == "--store"), "{text}");
    let elsewhere = env.path().join("elsewhere");
    fs::create_dir_all(&elsewhere).unwrap();
    let mut again = env.cmd();
    again.current_dir(&elsewhere).args(&undo);
    let out = ok_output(&mut again);
    assert_eq!(
        restored(),
        ffsession::format::decompress(&second).unwrap(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // `firefox -profile` with the folder quoted: one word.
    let start = text
        .lines()
        .find_map(|l| l.strip_prefix("start it with: "))
        .unwrap_or_else(|| panic!("{text}"));
    let words = shlex::split(start.split("   (").next().unwrap()).unwrap();
    assert_eq!(words.len(), 3, "{start}");
    assert_eq!(std::path::Path::new(&words[2]), profile);
}
