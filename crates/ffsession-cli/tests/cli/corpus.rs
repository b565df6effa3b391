//! Every command against every file of the bad-input corpus: a one-line error
//! naming the file, with a hint, exit code 1, no panic, no output file.

use std::fs;
use std::path::Path;

use crate::common::{expect_error, ok_json, stderr, Run, TestEnv};

#[test]
fn every_command_rejects_every_bad_file_cleanly() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ffsession/tests/corpus/bad");
    let mut files: Vec<_> = fs::read_dir(&corpus)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 30);
    let formats = [
        "text",
        "json",
        "jsonl",
        "csv",
        "markdown",
        "urls",
        "bookmarks",
    ];
    for file in &files {
        let env = TestEnv::new();
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let input = env.write(&name, &fs::read(file).unwrap());
        let mut commands: Vec<Vec<String>> = vec![
            vec!["info".into()],
            vec!["info".into(), "--json".into()],
            vec!["decompress".into(), "-o".into(), "out.json".into()],
            vec![
                "decompress".into(),
                "--pretty".into(),
                "-o".into(),
                "out.json".into(),
            ],
            vec!["compress".into(), "-o".into(), "out.jsonlz4".into()],
        ];
        commands.extend(
            formats
                .iter()
                .map(|f| vec!["tabs".into(), "--format".into(), (*f).into()]),
        );
        for args in commands {
            let out = env.cmd().args(&args).arg(&input).run();
            let err = stderr(&out);
            let what = format!("{name} with {args:?}");
            assert_eq!(out.status.code(), Some(1), "{what}: {err}");
            assert!(
                out.stdout.is_empty(),
                "{what}: printed {}",
                String::from_utf8_lossy(&out.stdout)
            );
            assert_eq!(err.lines().count(), 1, "{what}: {err}");
            assert!(err.starts_with("ffsession: error: "), "{what}: {err}");
            assert!(
                err.contains(&name),
                "{what}: error does not name the file: {err}"
            );
            assert!(err.contains("(hint: "), "{what}: no hint: {err}");
            assert!(!err.contains("panicked"), "{what}: {err}");
            let mut expected = vec!["home".to_owned(), name.clone()];
            expected.sort();
            assert_eq!(env.files(), expected, "{what}: left files behind");
        }
    }
}

#[test]
fn a_profile_full_of_bad_files_is_reported_not_fatal() {
    let env = TestEnv::new();
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ffsession/tests/corpus/bad");
    let profile = env.empty_profile();
    let backups = profile.join("sessionstore-backups");
    let mut count = 0;
    for entry in fs::read_dir(&corpus).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        fs::copy(&path, backups.join(format!("upgrade.jsonlz4-{name}"))).unwrap();
        count += 1;
    }
    // `profiles` lists every file with what is wrong with it, and succeeds.
    let v = ok_json(
        env.cmd()
            .args(["profiles", "--json", "--profile"])
            .arg(&profile),
    );
    let files = v[0]["session_files"].as_array().unwrap();
    assert_eq!(files.len(), count);
    for f in files {
        assert!(f["error"].as_str().is_some_and(|e| !e.is_empty()), "{f}");
    }
    // Commands that need a session say that none is readable, and list why.
    for args in [&["info"][..], &["tabs"]] {
        let err = expect_error(env.cmd().args(args).arg("--profile").arg(&profile));
        assert!(
            err.contains("no readable session file in this profile"),
            "{err}"
        );
        assert!(!err.contains("panicked"));
        assert_eq!(
            err.lines()
                .filter(|l| l.starts_with("ffsession: error"))
                .count(),
            1,
            "{err}"
        );
    }
}
