//! `--help` that teaches: commands grouped by task, global options under
//! their own heading, and no markdown left over from the doc comments.

use crate::common::{ok_stdout, Run, TestEnv};

/// Text of rustdoc that must not reach a help screen.
const LEFTOVERS: &[&str] = &["\\[", "\\]", "\\_", "\\*", "**", "](", "```", "[`", "<br"];

/// The commands of `help`'s "Commands:" section, or, at the top level, of
/// its task groups.
fn commands_in(help: &str, top: bool) -> Vec<String> {
    let mut names = Vec::new();
    let mut in_list = false;
    for line in help.lines() {
        if !line.starts_with(' ') && line.ends_with(':') {
            in_list = if top {
                !["Global options:", "Options:", "Examples:", "Exit status:"].contains(&line)
            } else {
                line == "Commands:"
            };
            continue;
        }
        if in_list {
            if let Some(name) = line
                .strip_prefix("  ")
                .and_then(|l| l.split_whitespace().next())
            {
                if name != "help" && name.chars().all(|c| c.is_ascii_lowercase()) {
                    names.push(name.to_owned());
                }
            }
        }
    }
    names
}

/// Does `text` list `option` as an option (a line starting with it, or
/// with its short form and it)?
fn lists_option(text: &str, option: &str) -> bool {
    text.lines().any(|l| {
        let l = l.trim_start();
        let l = match l.split_once(", ") {
            Some((short, rest)) if short.len() == 2 && short.starts_with('-') => rest,
            _ => l,
        };
        l.split([' ', '=']).next() == Some(option)
    })
}

#[test]
fn every_help_screen_is_plain_text_with_global_options_apart() {
    let env = TestEnv::new();
    let top = ok_stdout(env.cmd().arg("--help"));
    let groups: Vec<&str> = top
        .lines()
        .filter(|l| !l.starts_with(' ') && l.ends_with(':'))
        .collect();
    for group in [
        "Read sessions:",
        "Back up:",
        "Restore:",
        "Repair:",
        "Tidy:",
        "Global options:",
    ] {
        assert!(groups.contains(&group), "{group} missing: {top}");
    }
    // The commands are listed once, by task: no second flat list.
    assert!(!top.contains("\nCommands:"), "{top}");
    let mut commands: Vec<Vec<String>> = commands_in(&top, true)
        .into_iter()
        .map(|c| vec![c])
        .collect();
    assert!(commands.len() >= 22, "{commands:?}");
    let mut screens = 0;
    while let Some(path) = commands.pop() {
        for flag in ["-h", "--help"] {
            let help = ok_stdout(env.cmd().args(&path).arg(flag));
            screens += 1;
            for bad in LEFTOVERS {
                assert!(
                    !help.contains(bad),
                    "`ffsession {} {flag}` shows {bad:?}:\n{help}",
                    path.join(" ")
                );
            }
            // The options every command takes are under their own heading,
            // not mixed into the command's.
            let (own, global) = help
                .split_once("\nGlobal options:\n")
                .unwrap_or_else(|| panic!("{path:?}: no global options heading:\n{help}"));
            for option in [
                "--profile",
                "--store",
                "--lock-wait",
                "--firefox-dir",
                "--config",
            ] {
                let own_options = own.split_once("\nOptions:\n").map_or("", |(_, o)| o);
                assert!(
                    !lists_option(own_options, option),
                    "{path:?}: {option} among the command's options:\n{help}"
                );
                assert!(lists_option(global, option), "{path:?}: {option}:\n{help}");
            }
            if flag == "-h" {
                for sub in commands_in(&help, false) {
                    let mut p = path.clone();
                    p.push(sub);
                    commands.push(p);
                }
            }
        }
    }
    assert!(screens >= 48, "{screens}");

    // `check` says what it is for in a user's words first.
    let check = ok_stdout(env.cmd().args(["check", "-h"]));
    let summary = check.lines().next().unwrap();
    assert!(summary.starts_with("Check that every snapshot"), "{check}");
    assert!(
        !summary.contains("integrity_check") && !summary.contains("BLAKE3"),
        "{check}"
    );
}

#[test]
fn completions_for_every_shell_name_the_commands() {
    let env = TestEnv::new();
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let script = ok_stdout(env.cmd().args(["completions", shell]));
        for word in ["restore", "rescue", "backup", "lock-wait", "completions"] {
            assert!(script.contains(word), "{shell}: no {word}");
        }
    }
    let bash = ok_stdout(env.cmd().args(["completions", "bash"]));
    assert!(bash.contains("complete -F _ffsession"), "{bash}");
    let out = env.cmd().args(["completions", "tcsh"]).run();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn man_prints_the_manual_page_as_roff() {
    let env = TestEnv::new();
    let page = ok_stdout(env.cmd().arg("man"));
    // clap_mangen first defines the apostrophe string, then the title.
    let first = page
        .lines()
        .find(|l| !l.starts_with(".ie ") && !l.starts_with(".el "))
        .unwrap();
    assert!(first.starts_with(".TH ffsession 1"), "{page}");
    let subcommands = page
        .split_once(".SH SUBCOMMANDS\n")
        .expect("a SUBCOMMANDS section")
        .1;
    let top = ok_stdout(env.cmd().arg("--help"));
    let commands = commands_in(&top, true);
    assert!(commands.len() >= 24, "{commands:?}");
    for c in &commands {
        assert!(
            subcommands.contains(&format!("ffsession\\-{}(1)", c.replace('-', "\\-"))),
            "{c} missing"
        );
    }
    // Every page it names exists: clap's `help` has none.
    assert!(
        !subcommands.contains("ffsession\\-help(1)"),
        "{subcommands}"
    );
    // A command's own page.
    let backup = ok_stdout(env.cmd().args(["man", "backup"]));
    assert!(backup.contains("\n.TH ffsession-backup 1"), "{backup}");
    assert!(backup.contains("\\-\\-all\\-profiles"), "{backup}");
    let out = env.cmd().args(["man", "nope"]).run();
    assert_eq!(out.status.code(), Some(2));
}

/// The README's lines that install the completions and the manual page work
/// in a fresh home, where the folders they write into do not exist yet; and
/// the commands' help says where to put what they print, the folder made
/// first.
#[cfg(unix)]
#[test]
fn the_readme_lines_for_man_and_completions_work_in_a_fresh_home() {
    let env = TestEnv::new();
    let readme = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"),
    )
    .unwrap();
    let block = readme
        .split("```sh\n")
        .map(|b| b.split("```").next().unwrap())
        .find(|b| b.contains("ffsession man >"))
        .expect("the README's block for man and completions");
    let bin = assert_cmd::cargo::cargo_bin("ffsession");
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = env
        .sealed_cmd("sh")
        .args(["-e", "-c", block])
        .env("PATH", path)
        .run();
    assert!(
        out.status.success(),
        "{block}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let share = env.home().join(".local/share");
    let page = std::fs::read_to_string(share.join("man/man1/ffsession.1")).unwrap();
    assert!(page.contains(".TH ffsession 1"), "{page}");
    let script =
        std::fs::read_to_string(share.join("bash-completion/completions/ffsession")).unwrap();
    assert!(script.contains("complete -F _ffsession"));

    for (command, folder) in [
        ("man", "mkdir -p ~/.local/share/man/man1"),
        (
            "completions",
            "mkdir -p ~/.local/share/bash-completion/completions",
        ),
    ] {
        let help = ok_stdout(env.cmd().args([command, "--help"]));
        assert!(help.contains(folder), "{command}: {help}");
    }
}
