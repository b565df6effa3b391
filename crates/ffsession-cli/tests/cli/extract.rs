//! `extract`'s selectors of recently closed tabs, closed windows and
//! archived tabs: each becomes an open tab of the session written, with its
//! history as Firefox wrote it, as Firefox would reopen it.

use serde_json::{json, Value};

use crate::common::Run;
use crate::common::{expect_error, ok_json, ok_stdout, undo_id, TestEnv};
use crate::tidy::{aged_session, json_of, profile};

/// A tab showing `urls` (its back/forward history), at the last one.
fn tab(urls: &[&str]) -> Value {
    let entries: Vec<Value> = urls
        .iter()
        .map(|u| json!({"url": u, "title": format!("title of {u}"), "ID": u.len()}))
        .collect();
    json!({"entries": entries, "index": urls.len(), "lastAccessed": 1_795_000_000_000u64,
           "formdata": {"id": {"q": urls[0]}}})
}

/// Two open windows with recently closed tabs, two closed windows.
fn session() -> Value {
    let closed = |urls: &[&str], at: u64| json!({"state": tab(urls), "title": "closed", "closedAt": at, "pos": 1});
    json!({
        "version": ["sessionrestore", 1],
        "windows": [
            {"tabs": [tab(&["https://a1.example/"]), tab(&["https://a2.example/"])], "selected": 1,
             "_closedTabs": [closed(&["https://c1.example/"], 10),
                             closed(&["https://c2.example/", "https://c2.example/next"], 20)]},
            {"tabs": [tab(&["https://b1.example/"])], "selected": 1,
             "_closedTabs": [closed(&["https://c3.example/"], 30)]}
        ],
        "selectedWindow": 1,
        "_closedWindows": [
            {"tabs": [tab(&["https://x1.example/"]), tab(&["https://x2.example/", "https://x2.example/b"])],
             "selected": 2, "closedAt": 40, "_closedTabs": [closed(&["https://xc.example/"], 35)]},
            {"tabs": [tab(&["https://y1.example/"]), tab(&["https://y2.example/"])], "selected": 1, "closedAt": 50}
        ],
        "session": {"lastUpdate": 1_795_000_000_000u64}
    })
}

#[test]
fn closed_tabs_and_windows_become_open_ones_with_their_history() {
    let env = TestEnv::new();
    let original = session();
    let p = profile(&env, &original.to_string());
    let out = env.path().join("picked.jsonlz4");
    let r = ok_json(
        env.store_cmd(&p)
            .args(["extract", "current", "--closed-tab", "1:2", "--tab", "2:1"])
            .args(["--closed-window", "1", "--closed-window-tab", "2:2"])
            .args(["--json", "-o"])
            .arg(&out),
    );
    assert_eq!(
        (r["windows"].as_u64(), r["tabs"].as_u64()),
        (Some(4), Some(5)),
        "{r}"
    );
    let got = json_of(&env, &out);
    let w = &got["windows"];
    // The closed tab, reopened in its window: its state as Firefox wrote it.
    assert_eq!(
        w[0]["tabs"],
        json!([original["windows"][0]["_closedTabs"][1]["state"]])
    );
    assert_eq!(w[1]["tabs"], json!([original["windows"][1]["tabs"][0]]));
    // Closed window 1 whole, then the tab named of closed window 2.
    assert_eq!(w[2]["tabs"], original["_closedWindows"][0]["tabs"]);
    assert_eq!(w[2]["selected"], json!(2));
    assert_eq!(
        w[3]["tabs"],
        json!([original["_closedWindows"][1]["tabs"][1]])
    );
    // Nothing left closed: Firefox opens all of it.
    assert_eq!(got["_closedWindows"], json!([]));
    for win in w.as_array().unwrap() {
        assert_eq!(win["_closedTabs"].as_array().map_or(0, Vec::len), 0);
    }
    let listed = ok_stdout(env.cmd().args(["tabs", "--closed"]).arg(&out));
    assert_eq!(listed.lines().count(), 5, "{listed}");
    assert!(!listed.contains("[closed"), "{listed}");
    assert!(listed.contains("https://c2.example/next"), "{listed}");

    // Each selector alone, and what a wrong one says.
    let one = ok_json(
        env.store_cmd(&p)
            .args(["extract", "current", "--closed-tab", "2:1", "--json", "-o"])
            .arg(&out),
    );
    assert_eq!(
        (one["windows"].as_u64(), one["tabs"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(
        json_of(&env, &out)["windows"][0]["tabs"],
        json!([original["windows"][1]["_closedTabs"][0]["state"]])
    );
    for (args, what) in [
        (
            &["--closed-tab", "1:3"][..],
            "window 1 has 2 recently closed tabs",
        ),
        (&["--closed-tab", "3:1"][..], "the session has 2 windows"),
        (
            &["--closed-window", "3"][..],
            "the session has 2 closed windows",
        ),
        (
            &["--closed-window-tab", "1:3"][..],
            "tab 3 of closed window 1",
        ),
    ] {
        let err = expect_error(
            env.store_cmd(&p)
                .args(["extract", "current"])
                .args(args)
                .arg("-o")
                .arg(env.path().join("none.jsonlz4")),
        );
        assert!(err.contains(what), "{args:?}: {err}");
    }
    for args in [
        &["--closed-window", "0"][..],
        &["--window", "1", "--closed-tab", "1:1"][..],
        &["--archived", "--closed-tab", "1:1"][..],
    ] {
        let o = env
            .store_cmd(&p)
            .args(["extract", "current"])
            .args(args)
            .arg("-o")
            .arg(env.path().join("none.jsonlz4"))
            .run();
        assert_eq!(o.status.code(), Some(2), "{args:?}: a usage error");
    }
    assert!(!env.path().join("none.jsonlz4").exists());
}

#[test]
fn archived_tab_names_one_tab_tidy_closed() {
    let env = TestEnv::new();
    let p = profile(&env, &aged_session());
    ok_stdout(env.store_cmd(&p).arg("backup"));
    let done = ok_stdout(
        env.store_cmd(&p)
            .args(["tidy", "--archive-older-than", "30d"]),
    );
    let undo = undo_id(&done);
    let records = ok_json(env.store_cmd(&p).args(["tabs", "--archived", "--json"]));
    let records = records.as_array().unwrap();
    assert!(records.len() >= 3, "{records:?}");
    // The snapshot tidy took holds them open, as Firefox wrote them.
    let snapshot = env.path().join("snapshot.jsonlz4");
    ok_stdout(
        env.store_cmd(&p)
            .args(["extract", &undo, "-w", "1", "-w", "2", "-w", "3", "-o"])
            .arg(&snapshot),
    );
    let whole = json_of(&env, &snapshot);
    let out = env.path().join("two.jsonlz4");
    let r = ok_json(
        env.store_cmd(&p)
            .args([
                "extract",
                &undo,
                "--archived-tab",
                "3",
                "--archived-tab",
                "2",
            ])
            .args(["--json", "-o"])
            .arg(&out),
    );
    assert_eq!(r["tabs"].as_u64(), Some(2), "{r}");
    let got = json_of(&env, &out);
    let mut want: Vec<Value> = records[1..3]
        .iter()
        .map(|a| {
            let (w, pos) = (
                a["window"].as_u64().unwrap(),
                a["position"].as_u64().unwrap(),
            );
            whole["windows"][w as usize - 1]["tabs"][pos as usize - 1].clone()
        })
        .collect();
    let mut have: Vec<Value> = got["windows"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|w| w["tabs"].as_array().unwrap().clone())
        .collect();
    let key = |t: &Value| t.to_string();
    want.sort_by_key(key);
    have.sort_by_key(key);
    assert_eq!(have, want);
    let err = expect_error(
        env.store_cmd(&p)
            .args(["extract", &undo, "--archived-tab", "999", "-o"])
            .arg(env.path().join("none.jsonlz4")),
    );
    assert!(err.contains("--archived-tab 999"), "{err}");
    assert!(err.contains(&format!("snapshot {undo} holds")), "{err}");
}
