//! Tidying sessions: plans, the JSON written, applying with an undo point.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::DAY;
use ffsession::store::Store;
use ffsession::tidy::{self, Editable, Reason, TidyError, TidyRules};
use ffsession::SessionData;
use ffsession_gen::{generate, mozlz4, Spec};
use serde_json::{json, Value};

const NOW: u64 = 1_795_300_000_000;

/// A session with one window: tab 1 pinned and old, tab 2 old in a named
/// group, tab 3 old, tab 4 recent, tab 5 old duplicate of 4, tab 6 selected and old.
fn sample() -> Value {
    let tab = |url: &str, age_days: u64, extra: Value| {
        let mut t = json!({
            "entries": (1..=4).map(|i| json!({"url": format!("{url}#{i}"), "title": format!("T {url} {i}"), "ID": i}))
                .chain([json!({"url": url, "title": format!("T {url}")})]).collect::<Vec<_>>(),
            "index": 5,
            "lastAccessed": NOW - age_days * DAY,
            "image": "data:image/png;base64,AAAA",
            "formdata": {"id": {"q": "x"}},
            "storage": {"https://a": {"k": "v"}},
            "someFutureField": {"nested": [1, 2, {"x": "é"}]},
        });
        for (k, v) in extra.as_object().unwrap() {
            t[k] = v.clone();
        }
        t
    };
    json!({
        "version": ["sessionrestore", 1],
        "windows": [{
            "tabs": [
                tab("https://a.test/", 90, json!({"pinned": true})),
                tab("https://b.test/", 90, json!({"groupId": "g1"})),
                tab("https://c.test/", 90, json!({})),
                tab("https://d.test/", 1, json!({})),
                tab("https://d.test/", 60, json!({})),
                tab("https://e.test/", 90, json!({})),
            ],
            "selected": 6,
            "groups": [{"id": "g1", "name": "Work", "color": "blue", "collapsed": false}],
            "_closedTabs": [{"state": tab("https://z.test/", 2, json!({})), "closedAt": NOW}],
            "windowFutureField": 7,
        }],
        "selectedWindow": 1,
        "_closedWindows": [{"tabs": [tab("https://y.test/", 3, json!({}))], "selected": 1}],
        "session": {"lastUpdate": NOW, "startTime": NOW - DAY},
        "global": {},
    })
}

fn data_of(v: &Value) -> SessionData {
    SessionData::from_bytes("s.json", serde_json::to_vec(v).unwrap()).unwrap()
}

fn rules() -> TidyRules {
    TidyRules::default()
}

/// The rules that archive tabs last used more than 30 days ago.
fn archive_old() -> TidyRules {
    TidyRules {
        archive_older_than_ms: Some(30 * DAY),
        ..rules()
    }
}

/// Extracting `selection` from `s` is the error that nothing is selected
/// (`what` says which selection).
fn assert_nothing_selected(s: &Editable, selection: &tidy::Selection, what: &str) {
    let err = tidy::extract(s, selection);
    assert!(
        matches!(err, Err(TidyError::NothingSelected { .. })),
        "{what}: {err:?}"
    );
}

#[test]
fn old_tabs_go_except_pinned_selected_and_named_groups() {
    let data = data_of(&sample());
    let s = Editable::new(&data).unwrap();
    let r = archive_old();
    let plan = tidy::plan(&s, &r, NOW, false).unwrap();
    let gone: Vec<usize> = plan.closed.iter().map(|c| c.position).collect();
    assert_eq!(gone, vec![3, 5]);
    assert!(matches!(plan.closed[0].reason, Reason::Old { .. }));
    assert_eq!(plan.closed[0].url, "https://c.test/");
    assert_eq!((plan.tabs_before, plan.tabs_after), (6, 4));
    assert_eq!(plan.windows[0].tabs_after, 4);
    assert!(plan.bytes_after < plan.bytes_before);

    let out = tidy::render_json(&s, &plan, None);
    assert_eq!(out.len() as u64, plan.bytes_after);
    let v: Value = serde_json::from_slice(&out).unwrap();
    let w = &v["windows"][0];
    let urls: Vec<&str> = w["tabs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["entries"][4]["url"].as_str().unwrap())
        .collect();
    assert_eq!(
        urls,
        [
            "https://a.test/",
            "https://b.test/",
            "https://d.test/",
            "https://e.test/"
        ]
    );
    // The selected tab is the same tab, now 4th; the named group stays.
    assert_eq!(w["selected"], 4);
    assert_eq!(w["groups"][0]["name"], "Work");
    assert_eq!(w["windowFutureField"], 7);
    // Kept tabs are the bytes Firefox wrote.
    let original = serde_json::to_string(&sample()).unwrap();
    let first_tab = serde_json::to_string(&sample()["windows"][0]["tabs"][0]).unwrap();
    assert!(original.contains(&first_tab));
    assert!(String::from_utf8(out).unwrap().contains(&first_tab));

    // Asked otherwise, pinned, grouped and selected tabs go too.
    let all = TidyRules {
        include_pinned: true,
        include_grouped: true,
        include_selected: true,
        ..r
    };
    let plan = tidy::plan(&s, &all, NOW, false).unwrap();
    assert_eq!(plan.tabs_after, 1);
    let v: Value = serde_json::from_slice(&tidy::render_json(&s, &plan, None)).unwrap();
    assert_eq!(v["windows"][0]["selected"], 1);
    // The group lost all its tabs: it goes with them.
    assert_eq!(v["windows"][0]["groups"], json!([]));
}

#[test]
fn duplicates_keep_the_most_recently_used() {
    let data = data_of(&sample());
    let s = Editable::new(&data).unwrap();
    let r = TidyRules {
        close_duplicates: true,
        ..rules()
    };
    let plan = tidy::plan(&s, &r, NOW, false).unwrap();
    assert_eq!(plan.closed.len(), 1);
    assert_eq!(plan.closed[0].position, 5);
    assert_eq!(
        plan.closed[0].reason,
        Reason::Duplicate {
            of_window: 1,
            of_position: 4
        }
    );
}

/// An archive record of `tab` (window 1) as `tidy` keeps it.
fn record(tab: &tidy::ClosedTabPlan, position: Option<u64>) -> ffsession::store::ArchivedTab {
    ffsession::store::ArchivedTab {
        url: tab.url.clone(),
        title: tab.title.clone(),
        archived_at_ms: NOW,
        snapshot: ffsession::store::SnapshotId(1),
        reason: "duplicate".to_owned(),
        window: tab.window as u64,
        last_accessed: tab.last_accessed,
        position,
    }
}

/// The (URL, last access) of each tab an extract kept.
fn kept(result: &tidy::EditResult) -> Vec<(String, u64)> {
    let v: Value = serde_json::from_slice(&result.json).unwrap();
    v["windows"][0]["tabs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let i = t["index"].as_u64().unwrap() as usize - 1;
            let url = t["entries"][i]["url"].as_str().unwrap().to_owned();
            (url, t["lastAccessed"].as_u64().unwrap())
        })
        .collect()
}

#[test]
fn extract_archived_takes_the_recorded_tabs_not_their_twins() {
    let mut v = sample();
    // Tab 5 duplicates tab 4 down to its last access: only the position
    // tells them apart, and tidy closes the later one.
    v["windows"][0]["tabs"][4]["lastAccessed"] = json!(NOW - DAY);
    v["windows"][0]["tabs"][4]["marker"] = json!("tab 5");
    let data = data_of(&v);
    let s = Editable::new(&data).unwrap();
    let plan = tidy::plan(
        &s,
        &TidyRules {
            close_duplicates: true,
            ..rules()
        },
        NOW,
        false,
    )
    .unwrap();
    assert_eq!(plan.closed.len(), 1);
    let closed = &plan.closed[0];
    assert_eq!(closed.position, 5);
    let want = vec![("https://d.test/".to_owned(), NOW - DAY)];
    for position in [Some(5), None] {
        let records = [record(closed, position)];
        let r = tidy::extract(&s, &tidy::Selection::Archived(&records)).unwrap();
        assert_eq!((r.windows, r.tabs), (1, 1), "{position:?}");
        assert_eq!(kept(&r), want);
        // The tab kept is tab 5 itself, not its twin.
        let out: Value = serde_json::from_slice(&r.json).unwrap();
        assert_eq!(out["windows"][0]["tabs"][0], v["windows"][0]["tabs"][4]);
    }
    // A record naming a tab the session does not hold is an error.
    let mut wrong = record(closed, Some(3));
    let selection = tidy::Selection::Archived(std::slice::from_ref(&wrong));
    assert_nothing_selected(&s, &selection, "position 3");
    wrong.url = "https://nowhere.test/".to_owned();
    wrong.position = None;
    assert_nothing_selected(&s, &tidy::Selection::Archived(&[wrong]), "another URL");
}

#[test]
fn extract_tabs_takes_exactly_the_tabs_named() {
    let v = sample();
    let data = data_of(&v);
    let s = Editable::new(&data).unwrap();
    let r = tidy::extract(&s, &tidy::Selection::Tabs(vec![(1, 5), (1, 2)])).unwrap();
    assert_eq!((r.windows, r.tabs), (1, 2));
    let out: Value = serde_json::from_slice(&r.json).unwrap();
    // In the session's order, each as it was written.
    assert_eq!(out["windows"][0]["tabs"][0], v["windows"][0]["tabs"][1]);
    assert_eq!(out["windows"][0]["tabs"][1], v["windows"][0]["tabs"][4]);
    for bad in [vec![(1, 0)], vec![(0, 1)], vec![(1, 999)], vec![(99, 1)]] {
        let what = format!("{bad:?}");
        assert_nothing_selected(&s, &tidy::Selection::Tabs(bad), &what);
    }
}

#[test]
fn extract_picked_reopens_closed_tabs_and_windows() {
    let v = sample();
    let data = data_of(&v);
    let s = Editable::new(&data).unwrap();
    let picked = tidy::Picked {
        tabs: vec![(1, 2)],
        closed_tabs: vec![(1, 1)],
        closed_window_tabs: vec![(1, 1)],
        ..tidy::Picked::default()
    };
    let r = tidy::extract(&s, &tidy::Selection::Picked(picked)).unwrap();
    assert_eq!((r.windows, r.tabs), (2, 3));
    let out: Value = serde_json::from_slice(&r.json).unwrap();
    let w = &out["windows"];
    // The closed tab is its window's last open tab, as Firefox wrote it.
    assert_eq!(
        w[0]["tabs"],
        json!([
            v["windows"][0]["tabs"][1],
            v["windows"][0]["_closedTabs"][0]["state"]
        ])
    );
    assert_eq!(w[0]["groups"], v["windows"][0]["groups"], "tab 2's group");
    assert_eq!(w[0]["windowFutureField"], json!(7));
    assert_eq!(w[0]["selected"], json!(1));
    assert_eq!(w[0]["_closedTabs"], json!([]));
    assert_eq!(w[1]["tabs"], v["_closedWindows"][0]["tabs"]);
    assert_eq!(out["_closedWindows"], json!([]));
    assert_eq!(out["selectedWindow"], json!(1));

    // A closed tab alone: the group only removed tabs were in goes.
    let alone = tidy::Picked {
        closed_tabs: vec![(1, 1)],
        ..tidy::Picked::default()
    };
    let r = tidy::extract(&s, &tidy::Selection::Picked(alone)).unwrap();
    let out: Value = serde_json::from_slice(&r.json).unwrap();
    assert_eq!((r.windows, r.tabs), (1, 1));
    assert_eq!(out["windows"][0]["groups"], json!([]));

    for bad in [
        tidy::Picked {
            closed_tabs: vec![(1, 2)],
            ..tidy::Picked::default()
        },
        tidy::Picked {
            closed_tabs: vec![(2, 1)],
            ..tidy::Picked::default()
        },
        tidy::Picked {
            closed_windows: vec![2],
            ..tidy::Picked::default()
        },
        tidy::Picked {
            closed_window_tabs: vec![(1, 2)],
            ..tidy::Picked::default()
        },
        tidy::Picked::default(),
    ] {
        let what = format!("{bad:?}");
        assert_nothing_selected(&s, &tidy::Selection::Picked(bad), &what);
    }
}

#[test]
fn trim_history_drop_payload_and_closed() {
    let data = data_of(&sample());
    let s = Editable::new(&data).unwrap();
    let r = TidyRules {
        trim_history: Some(1),
        drop_payload: true,
        drop_closed: true,
        ..rules()
    };
    let plan = tidy::plan(&s, &r, NOW, false).unwrap();
    assert_eq!(plan.tabs_after, 6);
    assert_eq!(plan.windows[0].tabs_rewritten, 6);
    assert_eq!(
        (plan.closed_tabs_dropped, plan.closed_windows_dropped),
        (1, 1)
    );
    let out = tidy::render_json(&s, &plan, None);
    let v: Value = serde_json::from_slice(&out).unwrap();
    for t in v["windows"][0]["tabs"].as_array().unwrap() {
        // Current entry (5th of 5) and one back.
        assert_eq!(t["entries"].as_array().unwrap().len(), 2);
        assert_eq!(t["index"], 2);
        assert!(t["entries"][1]["url"].as_str().unwrap().ends_with(".test/"));
        assert!(
            t.get("image").is_none() && t.get("formdata").is_none() && t.get("storage").is_none()
        );
        assert_eq!(t["someFutureField"]["nested"][2]["x"], "é");
    }
    assert_eq!(v["windows"][0]["_closedTabs"], json!([]));
    assert_eq!(v["_closedWindows"], json!([]));
    // The model reads the result, with the same current pages.
    let after = SessionData::from_bytes("t.json", out).unwrap();
    let session = after.parse().unwrap();
    assert_eq!(session.windows[0].tabs[3].url(), Some("https://d.test/"));
}

#[test]
fn removing_every_tab_needs_allow_empty_and_bad_durations_are_refused() {
    let data = data_of(&sample());
    let s = Editable::new(&data).unwrap();
    let r = TidyRules {
        archive_older_than_ms: Some(0),
        include_pinned: true,
        include_grouped: true,
        include_selected: true,
        ..rules()
    };
    let e = tidy::plan(&s, &r, NOW + DAY, false).unwrap_err();
    assert!(
        matches!(e, TidyError::WouldRemoveAll { tabs: 6, .. }),
        "{e}"
    );
    assert_eq!(e.hint(), Some(ffsession::Hint::AllowEmpty));
    let plan = tidy::plan(&s, &r, NOW + DAY, true).unwrap();
    let v: Value = serde_json::from_slice(&tidy::render_json(&s, &plan, None)).unwrap();
    assert_eq!(v["windows"], json!([]));
    assert!(tidy::parse_duration("30 days").is_err());
}

#[test]
fn without_rules_each_rule_reports_its_savings() {
    let data = data_of(&sample());
    let s = Editable::new(&data).unwrap();
    let savings = tidy::rule_savings(&s, NOW).unwrap();
    let by = |rule: fn(&TidyRules) -> bool| savings.iter().find(|r| rule(&r.rule)).unwrap();
    assert_eq!(savings.len(), 5);
    assert!(savings.iter().all(|r| r.rule != TidyRules::default()));
    assert_eq!(
        by(|r| r.archive_older_than_ms == Some(30 * DAY)).tabs_closed,
        2
    );
    assert_eq!(by(|r| r.close_duplicates).tabs_closed, 1);
    assert!(by(|r| r.drop_payload).bytes_saved > 0);
    assert!(by(|r| r.drop_closed).bytes_saved > 0);
    assert_eq!(by(|r| r.trim_history == Some(5)).tabs_closed, 0);
}

/// A generated session whose tabs were last used `age` days ago (tab i: ages[i % len]).
fn generated(ages: &[u64]) -> String {
    let mut v: Value = serde_json::from_str(&generate(&Spec::default())).unwrap();
    let mut n = 0;
    for w in v["windows"].as_array_mut().unwrap() {
        for t in w["tabs"].as_array_mut().unwrap() {
            t["lastAccessed"] = json!(NOW - ages[n % ages.len()] * DAY);
            t["pinned"] = json!(false);
            n += 1;
        }
    }
    serde_json::to_string(&v).unwrap()
}

/// A profile (in a temporary folder, with a new store) whose session is
/// `json`: see [`profile_with`].
fn profile_and_store_with(json: &str) -> (tempfile::TempDir, PathBuf, Store) {
    let (tmp, profile, store) = common::profile_and_store();
    profile_with(&profile, json);
    (tmp, profile, store)
}

fn profile_with(dir: &Path, json: &str) {
    fs::create_dir_all(dir.join("sessionstore-backups")).unwrap();
    fs::write(dir.join("sessionstore.jsonlz4"), mozlz4(json.as_bytes())).unwrap();
    fs::write(
        dir.join("sessionstore-backups/recovery.jsonlz4"),
        mozlz4(json.as_bytes()),
    )
    .unwrap();
    fs::write(
        dir.join("prefs.js"),
        "user_pref(\"browser.startup.page\", 1);\n",
    )
    .unwrap();
}

#[test]
fn apply_keeps_an_undo_point_records_archived_tabs_and_restores_back() {
    let json = generated(&[90, 1]);
    let (_tmp, profile, mut store) = profile_and_store_with(&json);

    let current = tidy::load_current(&profile).unwrap();
    let s = Editable::new(&current.data).unwrap();
    let r = archive_old();
    let plan = tidy::plan(&s, &r, NOW, false).unwrap();
    assert!(!plan.closed.is_empty());
    let report = tidy::apply(
        &plan,
        &s,
        current.data.json(),
        &mut store,
        "test",
        &profile,
        NOW,
    )
    .unwrap();
    assert_eq!(report.archived, plan.closed.len());

    // Firefox finds the tidied session, and nothing to fall back to.
    let written = SessionData::read(profile.join("sessionstore.jsonlz4")).unwrap();
    assert_eq!(written.parse().unwrap().summary().tabs, plan.tabs_after);
    assert!(!profile
        .join("sessionstore-backups/recovery.jsonlz4")
        .exists());
    let prefs = fs::read_to_string(profile.join("prefs.js")).unwrap();
    assert!(prefs.contains("browser.sessionstore.resume_session_once\", true"));
    assert!(prefs.contains("browser.startup.page"));

    // The undo snapshot holds the session as it was, byte for byte.
    assert_eq!(store.read_json(report.undo).unwrap(), json.as_bytes());
    let archived = store.archived_tabs().unwrap();
    assert_eq!(archived.len(), plan.closed.len());
    assert!(archived
        .iter()
        .all(|a| a.snapshot == report.undo && a.reason == "old"));
    let mark = store.archive_mark(&archived[0].url).unwrap().unwrap();
    assert_eq!(mark.snapshot, report.undo);
    assert_eq!(store.archive_snapshots().unwrap(), vec![report.undo]);

    // Undo: restoring the undo snapshot brings every tab back.
    let restore_plan = ffsession::restore::plan(&store, report.undo, &profile).unwrap();
    ffsession::restore::execute(&restore_plan, &mut store, None, "test", NOW + 1).unwrap();
    let back = SessionData::read(profile.join("sessionstore.jsonlz4")).unwrap();
    assert_eq!(back.json(), json.as_bytes());
}

#[test]
fn apply_refuses_while_firefox_holds_the_profile() {
    let json = generated(&[90, 1]);
    let (_tmp, profile, mut store) = profile_and_store_with(&json);
    let before = fs::read(profile.join("sessionstore.jsonlz4")).unwrap();
    let current = tidy::load_current(&profile).unwrap();
    let s = Editable::new(&current.data).unwrap();
    let r = archive_old();
    let plan = tidy::plan(&s, &r, NOW, false).unwrap();
    let _firefox = ffsession_gen::FirefoxLockHolder::hold(&profile);
    let e = tidy::apply(
        &plan,
        &s,
        current.data.json(),
        &mut store,
        "t",
        &profile,
        NOW,
    )
    .unwrap_err();
    assert!(matches!(e, TidyError::FirefoxRunning { .. }), "{e}");
    assert_eq!(
        fs::read(profile.join("sessionstore.jsonlz4")).unwrap(),
        before
    );
    assert!(store.snapshots().unwrap().is_empty());
}

#[test]
fn a_damaged_newest_file_points_to_rescue_and_no_session_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let profile = tmp.path().join("profile");
    profile_with(&profile, &generated(&[1]));
    // The recovery file is newer and damaged.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let packed = mozlz4(generated(&[1]).as_bytes());
    fs::write(
        profile.join("sessionstore-backups/recovery.jsonlz4"),
        &packed[..packed.len() / 2],
    )
    .unwrap();
    let e = tidy::load_current(&profile).unwrap_err();
    assert!(matches!(e, TidyError::DamagedCurrent { .. }), "{e}");
    assert!(matches!(
        e.hint(),
        Some(ffsession::Hint::TidyDamagedCurrent { file }) if file == profile.join("sessionstore-backups/recovery.jsonlz4")
    ));

    let empty = tmp.path().join("empty");
    fs::create_dir_all(&empty).unwrap();
    let e = tidy::load_current(&empty).unwrap_err();
    assert!(
        matches!(e, TidyError::Read(ffsession::Error::NoSessionFile { .. })),
        "{e}"
    );
}

#[test]
fn a_tidied_or_merged_session_is_a_session_of_its_own_time() {
    let data = data_of(&sample());
    let s = Editable::new(&data).unwrap();
    let r = archive_old();
    let plan = tidy::plan(&s, &r, NOW, false).unwrap();
    let later = NOW + 5 * DAY;
    let v: Value = serde_json::from_slice(&tidy::render_json(&s, &plan, Some(later))).unwrap();
    // Newer than the session it came from; the rest of `session` as it was.
    assert_eq!(
        v["session"],
        json!({"lastUpdate": later, "startTime": NOW - DAY})
    );

    let other = data_of(&json!({
        "windows": [{"tabs": [{"entries": [{"url": "https://x.test/"}], "index": 1}]}],
        "session": {"startTime": 1},
    }));
    let o = Editable::new(&other).unwrap();
    let merged = tidy::merge(&[o, s], false, Some(later)).unwrap();
    let v: Value = serde_json::from_slice(&merged.json).unwrap();
    // The first session's `session` had no lastUpdate: it gets one.
    assert_eq!(v["session"], json!({"startTime": 1, "lastUpdate": later}));
    assert_eq!(v["windows"].as_array().unwrap().len(), 2);
}
