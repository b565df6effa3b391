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

/// The check every CLI test's runs pass (`common.rs`) fails a printed
/// command that would act elsewhere: one without the run's `--profile`
/// (it would act on the default profile), and one whose profile is a
/// relative path (it acts elsewhere from another folder). Unix only: the
/// check reads the shell's quoting.
#[cfg(unix)]
#[test]
fn a_printed_command_that_acts_elsewhere_fails_the_check() {
    use crate::common::{printed_commands_are_complete, Invocation};
    let env = TestEnv::new();
    // A default profile in profiles.ini, and another profile in a folder.
    let default = env.firefox_root().join("d.default");
    fs::create_dir_all(&default).unwrap();
    fs::write(
        env.firefox_root().join("profiles.ini"),
        "[Profile0]\nName=default\nIsRelative=1\nPath=d.default\nDefault=1\n",
    )
    .unwrap();
    let profile = env.empty_profile();
    let store = env.store_dir();
    let cmd = env.cmd();
    let envs: Vec<_> = cmd.get_envs().collect();
    let run_with = |args: &[&std::ffi::OsStr]| {
        Invocation::of(args.iter().copied(), envs.iter().copied(), Some(env.path()))
    };
    let printed = |text: &str| std::process::Output {
        status: std::process::ExitStatus::default(),
        stdout: text.as_bytes().to_vec(),
        stderr: Vec::new(),
    };
    let check = |run: &Invocation, text: &str| {
        let out = printed(text);
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            printed_commands_are_complete(run, &out)
        }))
        .err()
        .map(|e| e.downcast_ref::<String>().cloned().unwrap_or_default())
    };
    let run = run_with(&[
        "--profile".as_ref(),
        profile.as_os_str(),
        "--store".as_ref(),
        store.as_os_str(),
        "restore".as_ref(),
        "snapshot:1".as_ref(),
    ]);
    // Complete: it passes.
    let complete = format!(
        "to undo: {}",
        shlex::try_join([
            "ffsession",
            "--profile",
            &profile.to_string_lossy(),
            "--store",
            &store.to_string_lossy(),
            "restore",
            "snapshot:2",
        ])
        .unwrap()
    );
    assert_eq!(check(&run, &complete), None);
    // Without --profile: the default profile.
    let failed = check(&run, "to undo: ffsession restore snapshot:2").expect("the check passed");
    assert!(failed.contains("acts on another profile"), "{failed}");
    // A relative profile folder, from a run in the test folder.
    let run = run_with(&["--profile".as_ref(), "profile".as_ref(), "list".as_ref()]);
    let failed = check(&run, "see `ffsession --profile profile list`").expect("the check passed");
    assert!(failed.contains("acts on another profile"), "{failed}");
}
