//! Hints name only what exists: every flag a hint names is an option of the
//! command that showed it.

use crate::common::{expect_error, ok_stdout, session, TestEnv};

/// The long and short options (`--name`, `-x`) named in `text`.
fn flags_named(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || "`(),;'\"".contains(c))
        .filter(|w| {
            let name = w.trim_start_matches('-');
            (w.starts_with("--") && name.len() > 1 || w.len() == 2 && w.starts_with('-'))
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        })
        .map(str::to_owned)
        .collect()
}

/// Does `ffsession COMMAND --help` list `flag`?
fn has_flag(env: &TestEnv, command: &str, flag: &str) -> bool {
    let help = ok_stdout(env.cmd().args([command, "--help"]));
    help.split(|c: char| c.is_whitespace() || c == ',')
        .any(|w| w == flag || w.starts_with(&format!("{flag}=")))
}

#[test]
fn writing_over_the_input_names_only_flags_the_command_has() {
    let env = TestEnv::new();
    let g = session(Default::default());
    env.write("s.jsonlz4", &g.packed);
    env.write("s.json", g.json.as_bytes());
    let cases: [&[&str]; 6] = [
        &["rescue", "s.jsonlz4", "-o", "s.jsonlz4"],
        &["extract", "s.jsonlz4", "--window", "1", "-o", "s.jsonlz4"],
        &["merge", "s.jsonlz4", "-o", "s.jsonlz4"],
        &["compress", "s.json", "-o", "./s.json"],
        &["decompress", "s.jsonlz4", "-o", "./s.jsonlz4"],
        &["merge", "s.json", "s.jsonlz4", "-o", "./s.json"],
    ];
    for args in cases {
        let err = expect_error(env.cmd().args(args));
        assert!(err.contains("refusing to overwrite"), "{args:?}: {err}");
        let hint = err
            .split_once("hint:")
            .unwrap_or_else(|| panic!("{args:?}: no hint: {err}"))
            .1;
        let flags = flags_named(hint);
        assert!(flags.contains(&"-o".to_owned()), "{args:?}: {hint}");
        for flag in flags {
            assert!(
                has_flag(&env, args[0], &flag),
                "{}: the hint names {flag}, which it does not have: {hint}",
                args[0]
            );
        }
    }
    // Where --in-place exists, the hint offers it.
    let err = expect_error(env.cmd().args(["compress", "s.json", "-o", "./s.json"]));
    assert!(err.contains("--in-place"), "{err}");
}
