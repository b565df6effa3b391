//! A check, run as a unit test: every option that a hint, an error or a help
//! text names exists on the command that shows it. The sources are scanned
//! for string literals (and doc comments, which become `--help`); a flag
//! after `ffsession COMMAND` must be an option of that command; any other
//! flag must be an option of the command whose file names it
//! (`commands/<verb>.rs`), a global option, or, in files shared by several
//! commands (the library, `commands/mod.rs`, ...), one of the commands
//! listed for it in [`SHARED`].

use std::path::{Path, PathBuf};

/// Options named in shared files, and the commands that can show them.
const SHARED: &[(&str, &str, &[&str])] = &[
    ("tidy/plan.rs", "--archive-older-than", &["tidy"]),
    ("tidy/plan.rs", "--close-duplicates", &["tidy"]),
    ("tidy/plan.rs", "--drop-closed", &["tidy"]),
    ("tidy/plan.rs", "--drop-payload", &["tidy"]),
    ("tidy/plan.rs", "--trim-history", &["tidy"]),
    ("tidy/mod.rs", "--allow-empty", &["tidy"]),
    ("tidy/mod.rs", "--fts", &["extract"]),
    ("tidy/mod.rs", "--drop-closed", &["tidy"]),
    ("tidy/raw.rs", "--drop-payload", &["tidy"]),
    (
        "commands/output.rs",
        "--in-place",
        &["compress", "decompress"],
    ),
    ("restore.rs", "--undo-store", &["restore"]),
    ("remote/mod.rs", "--read-data", &["check"]),
    // The commands `watch`'s alarms name (alarms.rs).
    ("alarms.rs", "--snapshot", &["ui"]),
    ("alarms.rs", "--to", &["copy"]),
    ("watch/state.rs", "--read-data", &["check"]),
    // The command lines `ffsession ui` runs (web/actions.rs).
    ("web/actions.rs", "--dry-run", &["restore"]),
    ("web/actions.rs", "--window", &["extract"]),
    ("web/actions.rs", "--tab", &["extract"]),
    ("web/actions.rs", "--dedupe", &["merge"]),
    ("web/actions.rs", "--closed-window", &["extract"]),
    // The `extract` options that name each pick (web/pick.rs).
    ("web/pick.rs", "--window", &["extract"]),
    ("web/pick.rs", "--tab", &["extract"]),
    ("web/pick.rs", "--closed-tab", &["extract"]),
    ("web/pick.rs", "--closed-window", &["extract"]),
    ("web/pick.rs", "--closed-window-tab", &["extract"]),
    ("web/pick.rs", "--archived-tab", &["extract"]),
    ("web/layout.rs", "--dry-run", &["restore"]),
    // `restore latest` on a remote several machines copy to.
    ("commands/restore_whose.rs", "--from-machine", &["restore"]),
    ("commands/restore_whose.rs", "--any-machine", &["restore"]),
];

/// Arguments of other programs, not ours (the service manager's).
const OTHER_PROGRAMS: &[(&str, &str)] = &[
    ("commands/service.rs", "--user"),
    ("commands/service.rs", "--now"),
    ("commands/service.rs", "--no-pager"),
    // The browser's remote command line (`ffsession ui`'s "open now").
    ("web/actions.rs", "--new-window"),
    ("web/actions.rs", "--new-tab"),
];

/// Words after which the rest of a span names another program's options.
const PROGRAMS: &[&str] = &[
    "systemctl",
    "launchctl",
    "jq",
    "firefox",
    "restic",
    "git",
    "mkdir",
];

/// The string literals and doc comments (each block of `///` or `//!` lines
/// as one text) of Rust source `src`.
fn texts(src: &str) -> Vec<String> {
    let b = src.as_bytes();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    // Where the last doc line pushed ended: a doc line right after it goes on
    // the same block.
    let mut doc_end: Option<usize> = None;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = src[i..].find('\n').map_or(b.len(), |n| i + n);
                let line = &src[i..end];
                if let Some(doc) = line
                    .strip_prefix("///")
                    .or_else(|| line.strip_prefix("//!"))
                {
                    match (doc_end, out.last_mut()) {
                        (Some(e), Some(last)) if src[e..i].trim().is_empty() => {
                            last.push('\n');
                            last.push_str(doc);
                        }
                        _ => out.push(doc.to_owned()),
                    }
                    doc_end = Some(end);
                }
                i = end;
            }
            b'\'' => {
                // A char literal ('"', '\''), or a lifetime.
                if b.get(i + 1) == Some(&b'\\') {
                    i += 2;
                    while i < b.len() && b[i] != b'\'' {
                        i += 1;
                    }
                    i += 1;
                } else if b.get(i + 2) == Some(&b'\'') {
                    i += 3;
                } else {
                    i += 1;
                }
            }
            b'r' if (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#'))
                && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) =>
            {
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                let open = i + 1 + hashes;
                if b.get(open) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let close = format!("\"{}", "#".repeat(hashes));
                let end = src[open + 1..]
                    .find(&close)
                    .map_or(b.len(), |n| open + 1 + n);
                out.push(src[open + 1..end].to_owned());
                i = end + close.len();
            }
            b'"' => {
                let mut text = String::new();
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        match b.get(i + 1) {
                            Some(b'\n') => {
                                i += 2;
                                while i < b.len() && b[i].is_ascii_whitespace() {
                                    i += 1;
                                }
                                continue;
                            }
                            Some(b'n') => text.push('\n'),
                            Some(&c) => text.push(c as char),
                            None => {}
                        }
                        i += 2;
                        continue;
                    }
                    let ch = src[i..].chars().next().unwrap_or(' ');
                    text.push(ch);
                    i += ch.len_utf8();
                }
                out.push(text);
                i += 1;
            }
            _ => i += 1,
        }
    }
    out
}

/// A flag (`--name`, `-x`) in `word`, stripped of quotes and punctuation
/// around it and of a `=VALUE`.
fn flag_in(word: &str) -> Option<&str> {
    let w = word.trim_matches(|c: char| "`'\"()[],;:.{}|".contains(c));
    let w = w.split('=').next().unwrap_or(w);
    let name = w.strip_prefix("--").or_else(|| w.strip_prefix('-'))?;
    let ok = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        && (w.starts_with("--") || name.len() == 1);
    ok.then_some(w)
}

/// True when `command` (or one of its subcommands) or the root's global
/// options have `flag`.
fn has_flag(root: &clap::Command, command: &clap::Command, flag: &str) -> bool {
    let matches = |c: &clap::Command| {
        c.get_arguments().any(|a| {
            flag.strip_prefix("--").map_or_else(
                || {
                    let short = flag.trim_start_matches('-').chars().next();
                    a.get_short() == short
                        || a.get_short_and_visible_aliases()
                            .unwrap_or_default()
                            .iter()
                            .any(|s| Some(*s) == short)
                },
                |long| a.get_long() == Some(long),
            )
        })
    };
    flag == "--help"
        || flag == "-h"
        || root.get_arguments().any(|a| a.is_global_set()) && matches(root)
        || matches(command)
        || command.get_subcommands().any(|s| has_flag(root, s, flag))
}

/// Each problem: file, the text, the flag and the command it is missing from.
fn problems(root: &clap::Command, file: &str, text: &str) -> Vec<String> {
    let verb = file
        .strip_prefix("commands/")
        .and_then(|f| f.strip_suffix(".rs"))
        .and_then(|v| root.find_subcommand(v));
    let mut found = Vec::new();
    {
        // The command a span (`ffsession COMMAND ...`) is about, or None
        // outside one; true while the span is another program's.
        let mut span: Option<&clap::Command> = None;
        let mut other = false;
        for word in text.split_whitespace() {
            let bare = word.trim_matches(|c: char| "`'\"(),;:".contains(c));
            if word == "|" {
                // A pipe: what follows is another program.
                span = None;
                other = false;
                continue;
            }
            if bare == "ffsession" {
                span = Some(root);
                other = false;
            } else if PROGRAMS.contains(&bare) {
                other = true;
            } else if let Some(sub) = root
                .find_subcommand(bare)
                .filter(|_| word.starts_with('`') && span.is_none())
            {
                // `tabs --archived`: a command named in code quotes.
                span = Some(sub);
            } else if let Some(sub) = span.and_then(|c| c.find_subcommand(bare)) {
                span = Some(sub);
            } else if let Some(flag) = flag_in(word).filter(|_| !other) {
                let ok = ["--help", "-h", "--version", "-V"].contains(&flag)
                    || match span {
                        Some(c) => has_flag(root, c, flag),
                        None if OTHER_PROGRAMS.contains(&(file, flag)) => true,
                        None => {
                            let shared = SHARED
                                .iter()
                                .filter(|(f, name, _)| file.ends_with(f) && *name == flag)
                                .flat_map(|(_, _, commands)| commands.iter())
                                .map(|c| root.find_subcommand(c).expect("a command in SHARED"))
                                .collect::<Vec<_>>();
                            let short_outside = !flag.starts_with("--");
                            short_outside
                                || has_flag(root, root, flag)
                                    && root.get_arguments().any(|a| {
                                        a.is_global_set() && a.get_long() == flag.strip_prefix("--")
                                    })
                                || verb.is_some_and(|v| has_flag(root, v, flag))
                                || (!shared.is_empty()
                                    && shared.iter().all(|c| has_flag(root, c, flag)))
                        }
                    };
                if !ok {
                    found.push(format!(
                        "{file}: {flag} ({}) in {text:?}",
                        span.or(verb)
                            .map_or("no such global option", |c| c.get_name())
                    ));
                }
            }
            let end = word.trim_end_matches(|c| ",.:".contains(c));
            if end.ends_with('`') && end.len() > 1 || end.ends_with(';') || end.ends_with(')') {
                span = None;
                other = false;
            }
        }
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_flag_a_message_names_exists_on_its_command() {
    let root = crate::cli::whole_command();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut bad = Vec::new();
    let mut checked = 0;
    for dir in [manifest.join("src"), manifest.join("../ffsession/src")] {
        let mut files = Vec::new();
        rust_files(&dir, &mut files);
        for path in files {
            if path.ends_with("hint_flags.rs") {
                continue;
            }
            let rel = path
                .strip_prefix(&dir)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let src = std::fs::read_to_string(&path).unwrap();
            for text in texts(&src) {
                checked += 1;
                bad.extend(problems(&root, &rel, &text));
            }
        }
    }
    assert!(checked > 500, "only {checked} texts found");
    assert!(
        bad.is_empty(),
        "options named but missing:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_scan_finds_flags_and_their_commands() {
    let root = crate::cli::whole_command();
    let texts = texts(
        r##"let a = "pass --in-place"; // --nothing
        /// `ffsession rescue FILE -o OUT` or --window
        let b = r#"x "--json" y"#; let c = '"'; let d = "a \
                 --dedupe";"##,
    );
    assert_eq!(
        texts,
        [
            "pass --in-place",
            " `ffsession rescue FILE -o OUT` or --window",
            "x \"--json\" y",
            "a --dedupe",
        ]
    );
    assert!(!problems(
        &root,
        "commands/rescue.rs",
        "`ffsession rescue FILE -o OUT`"
    )
    .iter()
    .any(|_| true));
    assert_eq!(
        problems(&root, "commands/rescue.rs", "pass --in-place").len(),
        1
    );
    assert_eq!(
        problems(&root, "error.rs", "`ffsession rescue F --in-place`").len(),
        1
    );
    assert!(problems(&root, "commands/extract.rs", "pass --window 2").is_empty());
    assert_eq!(problems(&root, "store/x.rs", "pass --window 2").len(), 1);
    assert!(problems(&root, "store/x.rs", "pass --store DIR").is_empty());
    assert!(problems(
        &root,
        "commands/service.rs",
        "ffsession service install --no-enable"
    )
    .is_empty());
    assert!(problems(&root, "tidy/mod.rs", "pass --allow-empty").is_empty());
}
