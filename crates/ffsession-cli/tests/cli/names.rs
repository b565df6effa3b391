//! A SNAPSHOT|FILE argument means one thing (issue 45): a bare `1`,
//! `latest` or `current` that is also a file in the working folder is
//! refused, with a hint naming both ways to say it; `snapshot:1`,
//! `snapshot:latest` and `profile:current` are never a file, `./1` always
//! is.

use crate::common::Run;
use crate::common::{ok_stdout, output, stderr, with_tabs, TestEnv};

/// A store of two snapshots of `profile/`, and in the working folder the
/// files `1`, `latest` and `current`, each a session of its own.
fn store_and_look_alikes() -> (TestEnv, std::path::PathBuf) {
    let env = TestEnv::new();
    env.back_up_recovery(&with_tabs(&[("https://first.example/", "First")]));
    let profile = env.back_up_recovery(&with_tabs(&[("https://second.example/", "Second")]));
    for name in ["1", "latest", "current"] {
        env.write(
            name,
            &with_tabs(&[(&format!("https://file-{name}.example/"), "A file")]),
        );
    }
    (env, profile)
}

#[test]
fn a_name_that_is_both_a_snapshot_and_a_file_here_is_refused() {
    let (env, profile) = store_and_look_alikes();
    let out = env.path().join("out.jsonlz4");
    let refused: [(&[&str], &str, &str); 8] = [
        (&["restore", "1", "--dry-run"], "snapshot:1", "1"),
        (
            &["restore", "latest", "--dry-run"],
            "snapshot:latest",
            "latest",
        ),
        (&["rescue", "1", "-o"], "snapshot:1", "1"),
        (&["extract", "1", "--window", "1", "-o"], "snapshot:1", "1"),
        (
            &["extract", "current", "--window", "1", "-o"],
            "profile:current",
            "current",
        ),
        (
            &["merge", "2", "current", "-o"],
            "profile:current",
            "current",
        ),
        (&["diff", "1", "2"], "snapshot:1", "1"),
        (&["diff", "2", "current"], "profile:current", "current"),
    ];
    for (args, snapshot, name) in refused {
        // `./1`, or `.\1` on Windows.
        let file = std::path::Path::new(".").join(name);
        let file = file.display();
        let mut cmd = env.store_cmd(&profile);
        cmd.args(args);
        if args.last() == Some(&"-o") {
            cmd.arg(&out);
        }
        let output = cmd.run();
        let err = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("names both"), "{args:?}: {err}");
        assert!(err.contains(&format!("`{snapshot}`")), "{args:?}: {err}");
        assert!(err.contains(&format!("`{file}`")), "{args:?}: {err}");
        assert!(!out.exists(), "{args:?} wrote {}", out.display());
    }
}

#[test]
fn the_two_ways_to_say_it_mean_one_thing() {
    let (env, profile) = store_and_look_alikes();
    let urls =
        |file: &std::path::Path| ok_stdout(env.cmd().args(["tabs", "--format", "urls"]).arg(file));
    // The snapshot.
    let plan = ok_stdout(
        env.store_cmd(&profile)
            .args(["restore", "snapshot:1", "--dry-run"]),
    );
    assert!(plan.starts_with("restore #1 "), "{plan}");
    let plan = ok_stdout(
        env.store_cmd(&profile)
            .args(["restore", "snapshot:latest", "--dry-run"]),
    );
    assert!(plan.starts_with("restore #2 "), "{plan}");
    let out = env.path().join("one.jsonlz4");
    ok_stdout(
        env.store_cmd(&profile)
            .args(["extract", "snapshot:1", "--window", "1", "-o"])
            .arg(&out),
    );
    assert!(urls(&out).contains("https://first.example/"));
    // The profile's session.
    let merged = env.path().join("merged.jsonlz4");
    // `merge A B -o merged`, which must succeed: the merged session's URLs.
    let merge = |a: &str, b: &str| {
        ok_stdout(
            env.store_cmd(&profile)
                .args(["merge", a, b, "-o"])
                .arg(&merged),
        );
        urls(&merged)
    };
    let both = merge("profile:current", "snapshot:1");
    assert!(both.contains("https://second.example/"), "{both}");
    assert!(both.contains("https://first.example/"), "{both}");
    assert!(!both.contains("file-"), "{both}");
    // The files.
    let plan = ok_stdout(
        env.store_cmd(&profile)
            .args(["restore", "./1", "--dry-run"]),
    );
    assert!(plan.contains("./1"), "{plan}");
    let files = merge("./current", "./latest");
    assert!(files.contains("https://file-current.example/"), "{files}");
    assert!(files.contains("https://file-latest.example/"), "{files}");
    let diff = ok_stdout(env.store_cmd(&profile).args(["diff", "./1", "snapshot:1"]));
    assert!(diff.contains("https://file-1.example/"), "{diff}");
    // A malformed explicit name is a usage error, not a file.
    let out = output(
        env.store_cmd(&profile)
            .args(["restore", "snapshot:x", "--dry-run"]),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("snapshot:x: not a snapshot id"), "{err}");
}
