//! `info` and `tabs` on generated sessions, checked against the raw JSON.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use ffsession_gen::Spec;
use serde_json::Value;

use crate::common::Run;
use crate::common::{
    assert_contains_all, expect_error, ok_json, ok_stdout, session, stderr, TestEnv,
};

/// The sessions these tests read: 40 tabs in 3 windows.
fn spec() -> Spec {
    spec_of(40)
}

/// [`spec`] with `tabs` tabs (in its 3 windows).
fn spec_of(tabs: usize) -> Spec {
    Spec {
        tabs,
        windows: 3,
        ..Spec::default()
    }
}

/// (url, title) of every open tab, from the raw JSON.
fn expected_tabs(json: &str) -> Vec<(String, Option<String>)> {
    let v: Value = serde_json::from_str(json).unwrap();
    let mut out = Vec::new();
    for w in v["windows"].as_array().unwrap() {
        for t in w["tabs"].as_array().unwrap() {
            let entries = t["entries"].as_array().unwrap();
            let e = &entries[t["index"].as_u64().unwrap() as usize - 1];
            out.push((
                e["url"].as_str().unwrap().to_owned(),
                e["title"].as_str().map(str::to_owned),
            ));
        }
    }
    out
}

#[test]
fn info_json_counts_match_the_session() {
    let env = TestEnv::new();
    let g = session(spec());
    let file = env.write("s.jsonlz4", &g.packed);
    let v = ok_json(env.cmd().args(["info", "--json"]).arg(&file));
    assert_eq!(v["format"], "mozlz4");
    assert_eq!(v["windows"], g.spec.windows);
    assert_eq!(v["tabs"], g.spec.tabs);
    assert_eq!(
        v["closed_tabs"],
        g.spec.windows * g.spec.closed_tabs_per_window
    );
    assert_eq!(v["closed_windows"], g.spec.closed_windows);
    assert_eq!(v["last_update"], g.spec.last_update);
    assert_eq!(v["json_size"], g.json.len());
    assert_eq!(v["file_size"], g.packed.len());
    assert!(v["last_update_local"].as_str().unwrap().ends_with("UTC"));
}

#[test]
fn info_text_shows_counts_and_local_dates() {
    let env = TestEnv::new();
    let g = session(spec());
    let file = env.write("s.jsonlz4", &g.packed);
    let text = ok_stdout(env.cmd().arg("info").arg(&file));
    assert!(
        text.contains(&format!("tabs:            {} (", g.spec.tabs)),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "windows:         {} (selected: 1)",
            g.spec.windows
        )),
        "{text}"
    );
    let expected_date = jiff::Timestamp::from_millisecond(g.spec.last_update as i64)
        .unwrap()
        .strftime("%Y-%m-%d %H:%M:%S")
        .to_string();
    assert_contains_all(&text, &[&format!("last update:     {expected_date} UTC")]);
}

#[test]
fn tabs_json_lists_the_current_entry_of_every_tab() {
    let env = TestEnv::new();
    let g = session(spec());
    let file = env.write("s.jsonlz4", &g.packed);
    let v = ok_json(env.cmd().args(["tabs", "--format", "json"]).arg(&file));
    let actual: Vec<(String, Option<String>)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["url"].as_str().unwrap().to_owned(),
                t["title"].as_str().map(str::to_owned),
            )
        })
        .collect();
    assert_eq!(actual, expected_tabs(&g.json));
    assert!(v.as_array().unwrap().iter().all(|t| t["state"] == "open"));
}

/// `tabs FILE` parses a large mozlz4 file while it decodes
/// (`SessionData::read_parsed`): it lists what the same session as plain
/// JSON lists (read the ordinary way), also from a pipe; `decompress`
/// checks it the same way; and a damaged one fails as `info` fails on it.
#[test]
fn tabs_of_a_large_file_parsed_while_it_decodes_are_those_of_its_json() {
    let env = TestEnv::new();
    let g = session(spec_of(400));
    assert!(
        g.json.len() >= 2 << 20,
        "large enough to be parsed while it decodes"
    );
    let packed = env.write("s.jsonlz4", &g.packed);
    let plain = env.write("s.json", g.json.as_bytes());
    for args in [
        &["tabs", "--json"][..],
        &["tabs", "--closed", "--format", "csv"],
        &["tabs", "--window", "2"],
    ] {
        let listed = ok_stdout(env.cmd().args(args).arg(&packed));
        assert_eq!(
            listed,
            ok_stdout(env.cmd().args(args).arg(&plain)),
            "{args:?}"
        );
        #[cfg(unix)]
        assert_eq!(
            listed,
            ok_stdout(
                env.cmd()
                    .args(args)
                    .arg("/dev/stdin")
                    .write_stdin(g.packed.clone())
            ),
            "{args:?}"
        );
    }
    let v = ok_json(env.cmd().args(["tabs", "--json"]).arg(&packed));
    let urls: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["url"].as_str().unwrap())
        .collect();
    let expected: Vec<String> = expected_tabs(&g.json).into_iter().map(|t| t.0).collect();
    assert_eq!(urls, expected);

    // `decompress` checks it the same way before writing it.
    let out = env.cmd().arg("decompress").arg(&packed).run();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(out.stdout, g.json.as_bytes());

    let cut = env.write("cut.jsonlz4", &g.packed[..g.packed.len() / 2]);
    let err = expect_error(env.cmd().args(["tabs", "--json"]).arg(&cut));
    assert!(err.contains("cut.jsonlz4"), "{err}");
    assert_eq!(err, expect_error(env.cmd().arg("info").arg(&cut)));
    assert_eq!(err, expect_error(env.cmd().arg("decompress").arg(&cut)));
}

#[test]
fn every_format_keeps_tricky_titles_intact() {
    let env = TestEnv::new();
    let g = session(spec());
    let file = env.write("s.json", g.json.as_bytes());
    let expected = expected_tabs(&g.json);
    let run = |format: &str| ok_stdout(env.cmd().args(["tabs", "--format", format]).arg(&file));
    // Structured formats keep titles byte for byte.
    let jsonl: Vec<Value> = run("jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(jsonl.len(), expected.len());
    let csv_out = run("csv");
    let mut reader = csv::Reader::from_reader(csv_out.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), expected.len());
    for ((url, title), (row, line)) in expected.iter().zip(rows.iter().zip(&jsonl)) {
        assert_eq!(&row[col("url")], url);
        assert_eq!(&row[col("title")], title.as_deref().unwrap_or(""));
        assert_eq!(line["title"].as_str(), title.as_deref());
    }
    let tricky = expected
        .iter()
        .filter(|(_, t)| {
            t.as_deref()
                .is_some_and(|t| t.contains(['"', ',', '<', '&', '\n']))
        })
        .count();
    assert!(tricky > 3, "the generated titles should be tricky");

    // Line formats keep one tab per line.
    assert_eq!(
        run("urls").lines().collect::<Vec<_>>(),
        expected.iter().map(|(u, _)| u.as_str()).collect::<Vec<_>>()
    );
    assert_eq!(run("text").lines().count(), expected.len());
    let md = run("markdown");
    assert_eq!(
        md.lines().filter(|l| l.starts_with("- [")).count(),
        expected.len()
    );
    assert_eq!(
        md.lines().filter(|l| l.starts_with("## Window ")).count(),
        g.spec.windows
    );

    // Bookmarks HTML: every title and URL survives HTML escaping.
    let html = run("bookmarks");
    let anchors: Vec<&str> = html
        .lines()
        .filter(|l| l.trim_start().starts_with("<DT><A HREF="))
        .collect();
    assert_eq!(anchors.len(), expected.len());
    for ((url, title), line) in expected.iter().zip(anchors) {
        let href = line
            .split("HREF=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        assert_eq!(html_escape::decode_html_entities(href), *url);
        let text = line.split('>').skip(2).collect::<Vec<_>>().join(">");
        let text = text.strip_suffix("</A>").unwrap();
        let want = title
            .clone()
            .unwrap_or_else(|| url.clone())
            .replace(|c: char| c.is_control(), " ");
        assert_eq!(html_escape::decode_html_entities(text), want);
        assert!(!text.contains('<'), "unescaped < in {line}");
    }
    assert_eq!(html.matches("<H3>").count(), g.spec.windows);
}

#[test]
fn window_filter_and_closed_tabs() {
    let env = TestEnv::new();
    let g = session(spec());
    let file = env.write("s.jsonlz4", &g.packed);
    let v = ok_json(
        env.cmd()
            .args(["tabs", "--json", "--window", "2"])
            .arg(&file),
    );
    assert!(!v.as_array().unwrap().is_empty());
    assert!(v.as_array().unwrap().iter().all(|t| t["window"] == 2));

    let v = ok_json(env.cmd().args(["tabs", "--json", "--closed"]).arg(&file));
    let count = |state: &str| {
        v.as_array()
            .unwrap()
            .iter()
            .filter(|t| t["state"] == state)
            .count()
    };
    assert_eq!(count("open"), g.spec.tabs);
    assert_eq!(
        count("closed"),
        g.spec.windows * g.spec.closed_tabs_per_window
    );
    assert_eq!(count("closed-window"), g.spec.closed_windows * 2);

    let err = expect_error(env.cmd().args(["tabs", "--window", "9"]).arg(&file));
    assert_contains_all(&err, &["no window 9 (the session has 3 windows)"]);
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    let env = TestEnv::new();
    let g = session(Spec {
        favicon_bytes: 10,
        ..spec_of(3000)
    });
    let file = env.write("s.jsonlz4", &g.packed);
    let profile = env.profile_with(&[("sessionstore.jsonlz4", &g.packed)]);
    let file = file.to_str().unwrap();
    let profile = profile.to_str().unwrap();
    // Streamed text and JSON, and JSON from serde_json, whose I/O error is
    // wrapped (the plan of a dry run closing 2,000 tabs or more).
    for args in [
        &["tabs", "--format", "urls", file][..],
        &["tabs", "--json", file],
        &["tidy", "--profile", profile, "--dry-run", "--json"],
        &[
            "tidy",
            "--profile",
            profile,
            "--dry-run",
            "--json",
            "--archive-older-than",
            "1s",
        ],
    ] {
        let mut child = spawn_piped(&env, args);
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        assert!(
            first.starts_with("https://") || first.starts_with(['[', '{']),
            "{first}"
        );
        // The reader is dropped here, closing the pipe while ffsession still writes.
        ends_quietly(child, args);
    }
}

/// `ffsession ARGS`, started with its stdout and stderr piped.
fn spawn_piped(env: &TestEnv, args: &[&str]) -> std::process::Child {
    env.std_cmd()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// `child` (`ffsession ARGS`, whose stdout the test closed) ends well and
/// says nothing on stderr.
fn ends_quietly(child: std::process::Child, args: &[&str]) {
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: exit {:?}: {}",
        out.status,
        stderr(&out)
    );
    assert_eq!(stderr(&out), "", "{args:?}");
}

#[test]
fn a_pipe_closed_before_anything_is_written_is_not_an_error() {
    let env = TestEnv::new();
    // The completion script is made by clap_complete, which panics on a
    // write error, and the manual page by clap_mangen.
    for args in [&["completions", "bash"][..], &["man"]] {
        let mut child = spawn_piped(&env, args);
        drop(child.stdout.take());
        ends_quietly(child, args);
    }
}

#[test]
fn the_shipped_sample_reads() {
    let env = TestEnv::new();
    let sample =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/session.jsonlz4");
    let v = ok_json(env.cmd().args(["info", "--json"]).arg(&sample));
    assert!(v["tabs"].as_u64().unwrap() > 0);
}

/// A session read from a pipe (`ffsession info <(...)`, `... | ffsession
/// info /dev/stdin`) reads as the file does. A pipe has no size and cannot
/// be opened a second time: the reader reads it to its end.
#[cfg(unix)]
#[test]
fn a_session_from_a_pipe_reads_as_the_file_does() {
    let env = TestEnv::new();
    let g = session(spec_of(400));
    assert!(g.packed.len() > 64 << 10, "more than a pipe holds at once");
    let file = env.write("s.jsonlz4", &g.packed);
    let urls = ["tabs", "--format", "urls"];
    let from_file = ok_stdout(env.cmd().args(urls).arg(&file));
    let piped = ok_stdout(
        env.cmd()
            .args(urls)
            .arg("/dev/stdin")
            .write_stdin(g.packed.clone()),
    );
    assert_eq!(piped, from_file);
    assert_eq!(piped.lines().count(), 400);
    let v = ok_json(
        env.cmd()
            .args(["info", "--json", "/dev/stdin"])
            .write_stdin(g.packed.clone()),
    );
    assert_eq!(v["tabs"], 400);
    assert_eq!(v["file_size"], g.packed.len());
}
