//! The errors a user of a remote meets, each one line that says what
//! happened and what to do, against the real servers of `.ci/servers.sh`
//! (issue 38): an unknown or changed SSH host key (with the `ssh` command
//! that accepts one), mistyped locations (which make no folder), a server
//! that refuses the connection, age's two-line messages.

use std::fs;
#[cfg(unix)]
use std::path::{Path, PathBuf};

#[cfg(unix)]
use crate::common::{fake_program, path_with_first};
use crate::common::{stderr, Run, TestEnv};
use crate::remote_common::backed_up;
#[cfg(unix)]
use crate::remote_common::{
    assert_remote_restores, cmd, prepared, servers, servers_dir, sftp_dir, store_cmd, Kind,
};

/// A folder of its own with an `ssh` that reads the servers' SSH config but
/// the known hosts file `known_hosts`.
#[cfg(unix)]
fn ssh_with_known_hosts(env: &TestEnv, known_hosts: &Path) -> PathBuf {
    let servers = servers_dir().unwrap();
    let config = fs::read_to_string(servers.join("ssh_config"))
        .unwrap()
        .replace(
            &servers.join("known_hosts").to_string_lossy().into_owned(),
            &known_hosts.to_string_lossy(),
        );
    let config_path = env.write("ssh_config", config.as_bytes());
    fake_program(
        &env.path().join("ssh-bin"),
        "ssh",
        &format!(
            "#!/bin/sh\nexec /usr/bin/ssh -F {} \"$@\"\n",
            config_path.display()
        ),
    )
}

/// A server whose host key is not known yet: the error says so and gives
/// the `ssh` command that shows the key and accepts it; once accepted, the
/// copy works. A key that differs from the known one is named as such.
#[cfg(unix)]
#[test]
fn remote_unknown_host_key_is_named_with_the_command_that_accepts_it() {
    let Some(servers) = servers() else { return };
    let (env, profile, jsons, loc) = prepared(Kind::Sftp, 1, 50_000);
    let known = env.write("known_hosts", b"");
    let bin = ssh_with_known_hosts(&env, &known);
    let path = path_with_first(&bin);
    let run = |env: &TestEnv| {
        store_cmd(env, &profile)
            .env("PATH", &path)
            .args(["copy", "--to", &loc])
            .run()
    };
    let out = run(&env);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("host key of 127.0.0.1 is not known yet"),
        "{err}"
    );
    let command = "ssh -o StrictHostKeyChecking=ask 127.0.0.1 exit";
    assert!(err.contains(command), "{err}");
    assert!(!err.contains("check the connection"), "{err}");
    assert!(!sftp_dir(&loc).exists());

    // The command works (here without its question: accept-new).
    let accepted = std::process::Command::new(bin.join("ssh"))
        .args(command.replace("=ask", "=accept-new").split(' ').skip(1))
        .run();
    assert!(accepted.status.success(), "{}", stderr(&accepted));
    assert!(!fs::read(&known).unwrap().is_empty());
    let out = run(&env);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_remote_restores(&loc, &jsons);

    // A key other than the one known: named as such, with what to do.
    let other = env.path().join("other_key");
    let made = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&other)
        .status()
        .unwrap();
    assert!(made.success());
    let known_line = fs::read_to_string(servers.dir.join("known_hosts")).unwrap();
    let host = known_line.split(' ').next().unwrap();
    let other_pub = fs::read_to_string(other.with_extension("pub")).unwrap();
    let fields: Vec<&str> = other_pub.split(' ').take(2).collect();
    fs::write(&known, format!("{host} {}\n", fields.join(" "))).unwrap();
    let out = run(&env);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("differs from the one known_hosts holds"),
        "{err}"
    );
    assert!(err.contains("ssh-keygen -R"), "{err}");
}

/// The small errors of a location: a bare word that names no remote, a
/// URL missing its `//`, an empty location, a port out of range: each one
/// error, and no folder made in the current one. A server that cannot be
/// reached while reading says nothing of a copy.
#[test]
fn remote_mistyped_locations_are_one_error_each_and_make_no_folder() {
    let env = TestEnv::new();
    let (profile, _) = backed_up(&env, 1, 10_000);
    for (to, says) in [
        ("nas", "no remote named \"nas\" in the config file"),
        (
            "sftp:/127.0.0.1/tmp/x",
            "did you mean sftp://127.0.0.1/tmp/x?",
        ),
        ("", "an empty location"),
        ("sftp://127.0.0.1:99999/x", "not a number from 1 to 65535"),
    ] {
        let before = env.files();
        let out = env
            .store_cmd(&profile)
            .env("FFSESSION_PASSWORD", "pw")
            .args(["copy", "--to", to])
            .run();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{to:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{to:?}: {err}");
        assert!(err.contains(says), "{to:?}: {err}");
        assert!(!err.contains("created a remote store"), "{err}");
        assert_eq!(env.files(), before, "{to:?} made files");
    }
    // `./nas` is a folder, and becomes a remote store.
    let out = env
        .store_cmd(&profile)
        .env("FFSESSION_PASSWORD", "pw")
        .env("FFSESSION_TEST_SCRYPT_LOG_N", "10")
        .args(["copy", "--to", "./nas"])
        .run();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(env.path().join("nas/ffsession-remote.json").is_file());
}

/// A read of a server that refuses the connection names what ssh said, and
/// its hint speaks of the connection, not of a copy cut short.
#[cfg(unix)]
#[test]
fn remote_read_errors_say_what_ssh_said_without_a_copy_hint() {
    let Some(_) = servers_dir() else { return };
    let env = TestEnv::new();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let out = cmd(&env)
        .args(["--store", &format!("sftp://127.0.0.1:{port}/x"), "list"])
        .run();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("Connection refused"), "{err}");
    assert!(!err.contains("a copy cut short"), "{err}");
}

/// age's messages come on two lines ("Unknown age format.\nHave you tried
/// upgrading..."): a damaged record is named on one line by `check` (no
/// literal `\n`) and by the warning of a read, a damaged key by its error.
#[test]
fn remote_age_errors_are_one_line_without_a_literal_newline() {
    let env = TestEnv::new();
    let (profile, _) = backed_up(&env, 2, 10_000);
    let usb = env.path().join("usb");
    env.copy_to_folder(&profile, &usb, "pw");
    let newer = b"age-encryption.org/v9\nfrom the future\n";
    let record = ffsession_gen::files_under(&usb.join("snapshots"))[0].clone();
    fs::write(&record, newer).unwrap();
    let run = |args: &[&str]| {
        env.cmd()
            .env("FFSESSION_PASSWORD", "pw")
            .arg("--store")
            .arg(&usb)
            .args(args)
            .run()
    };
    let out = run(&["check"]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let named: Vec<&str> = text.lines().filter(|l| l.contains("age format")).collect();
    assert!(!named.is_empty(), "{text}");
    for line in named {
        assert!(!line.contains("\\n"), "{line}");
        assert!(line.contains("Have you tried upgrading"), "{line}");
    }
    let out = run(&["list"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(
        err.lines().filter(|l| l.contains("warning")).count(),
        1,
        "{err}"
    );
    assert!(
        err.lines().all(|l| l.starts_with("ffsession:")),
        "a warning on two lines: {err}"
    );

    // Every copy of the key damaged, and no spare of it on this machine
    // (a machine that opened the remote before keeps one, and its kept key:
    // remote_keys.rs, remote_kept.rs).
    for key in ffsession_gen::files_under(&usb.join("keys")) {
        fs::write(&key, newer).unwrap();
    }
    for spare in ffsession_gen::files_under(&env.home())
        .into_iter()
        .filter(|p| {
            p.ends_with("key.age") || p.parent().is_some_and(|d| d.ends_with("remote-keys"))
        })
    {
        fs::remove_file(spare).unwrap();
    }
    let out = run(&["list"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!err.contains("\\n"), "{err}");
    assert!(err.contains("keys/"), "{err}");
}
