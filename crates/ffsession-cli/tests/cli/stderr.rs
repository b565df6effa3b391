//! What goes to stderr besides errors: notes `--quiet` silences, and colour
//! only on a terminal without NO_COLOR, as clap's own messages.

use crate::common::{ok_output, packed, stderr, Run, TestEnv};

#[test]
fn quiet_silences_the_notes_but_not_warnings_or_errors() {
    let env = TestEnv::new();
    let profile = env.profile_with(&[
        ("sessionstore-backups/recovery.jsonlz4", &packed(4, 2_000)),
        ("sessionstore-backups/previous.jsonlz4", b"damaged"),
    ]);
    let loud = ok_output(env.cmd().arg("--profile").arg(&profile).arg("info"));
    let err = stderr(&loud);
    assert!(err.contains("ffsession: using "), "{err}");
    assert!(err.contains("ffsession: warning: skipped "), "{err}");
    for q in ["-q", "--quiet"] {
        let quiet = ok_output(env.cmd().arg(q).arg("--profile").arg(&profile).arg("info"));
        assert_eq!(quiet.stdout, loud.stdout);
        // The damaged file is still said; which file was used is not.
        let err = stderr(&quiet);
        assert!(!err.contains("using"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("ffsession: warning: skipped "), "{err}");
    }
    // After the command too, as every global option.
    let quiet = ok_output(
        env.cmd()
            .arg("--profile")
            .arg(&profile)
            .args(["tabs", "-q"]),
    );
    assert!(!stderr(&quiet).contains("using"), "{}", stderr(&quiet));

    // The notes of the store commands, and search's "no tabs match".
    std::fs::remove_file(profile.join("sessionstore-backups/previous.jsonlz4")).unwrap();
    ok_output(env.store_cmd(&profile).arg("backup"));
    let chart = env.path().join("tabs.svg");
    let out = ok_output(
        env.store_cmd(&profile)
            .args(["stats", "-q", "--plot"])
            .arg(&chart),
    );
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
    let out = ok_output(
        env.store_cmd(&profile)
            .args(["prune", "-q", "--keep-last", "1"]),
    );
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
    let out = env
        .store_cmd(&profile)
        .args(["search", "-q", "nothing-like-it"])
        .run();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
    // Errors are never silenced.
    let out = env.cmd().args(["-q", "info", "missing.jsonlz4"]).run();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("ffsession: error: "),
        "{}",
        stderr(&out)
    );
}

/// `ffsession ARGS` on a pseudo-terminal (util-linux `script`), as a person
/// runs it: what the terminal shows. Unix only: a Windows console cannot be
/// given to a test's child under Wine (anstream colours a Windows console
/// through the same code).
#[cfg(unix)]
fn on_terminal(env: &TestEnv, args: &str, no_color: bool) -> String {
    let bin = assert_cmd::cargo::cargo_bin("ffsession");
    let mut cmd = env.sealed_cmd("script");
    cmd.env("TERM", "xterm-256color")
        .arg("-qec")
        .arg(format!("{} {args}", bin.display()))
        .arg("/dev/null");
    if no_color {
        cmd.env("NO_COLOR", "1");
    }
    let out = cmd
        .output()
        .expect("util-linux `script` runs a command on a pseudo-terminal");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[cfg(unix)]
#[test]
fn errors_are_coloured_like_clap_s_on_a_terminal_only() {
    let env = TestEnv::new();
    const RED_BOLD_ERROR: &str = "\u{1b}[1m\u{1b}[31merror:\u{1b}[0m";
    // Our own error, and clap's usage error: the same red bold "error:".
    for args in ["info missing.jsonlz4", "--lock-wait never list"] {
        let shown = on_terminal(&env, args, false);
        assert!(shown.contains(RED_BOLD_ERROR), "{args}: {shown:?}");
        let plain = on_terminal(&env, args, true);
        assert!(!plain.contains('\u{1b}'), "{args}: NO_COLOR: {plain:?}");
        assert!(plain.contains("error:"), "{plain:?}");
    }
    // Not a terminal (a pipe, a log file): plain text.
    let out = env.cmd().args(["info", "missing.jsonlz4"]).run();
    let err = stderr(&out);
    assert!(
        err.starts_with("ffsession: error: ") && !err.contains('\u{1b}'),
        "{err:?}"
    );
}
