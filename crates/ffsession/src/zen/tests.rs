use std::borrow::Cow;

use super::*;
use crate::session::{Session, TabFilter};

fn files() -> ffsession_gen::ZenFiles {
    ffsession_gen::zen_files(&ffsession_gen::ZenSpec::default())
}

#[test]
fn a_file_as_zen_writes_it_reads_with_its_spaces_tabs_and_folders() {
    let json = files().zen_sessions;
    let z = ZenSessions::from_json(json.as_bytes()).unwrap();
    assert!(z.has_zen_fields());
    assert_eq!(z.last_collected, Some(1_790_000_000_000));
    let names: Vec<_> = z
        .spaces
        .iter()
        .map(|s| s.name.as_deref().unwrap())
        .collect();
    assert_eq!(names, ["Work", "Home \"sweet\" home", "Research"]);
    assert_eq!(z.tabs.len(), 2 + 3 * 3);
    assert_eq!(z.folders.len(), 1);
    let s = z.summary();
    assert_eq!(
        (s.spaces, s.tabs, s.essential_tabs, s.pinned_tabs, s.folders),
        (3, 11, 2, 5, 1)
    );
    assert_eq!(s.history_entries, 22);
    assert!(s.space_tabs.iter().all(|sp| sp.tabs == 3), "{s:?}");

    let records: Vec<_> = z.tab_records().collect();
    assert_eq!(records.len(), 11);
    // Essentials: pinned, in no space.
    assert!(records[..2].iter().all(|r| r.essential && r.pinned));
    assert!(records[..2].iter().all(|r| r.space.is_none()));
    // Each other tab names its space by name, and the folder by name.
    assert_eq!(records[2].space.as_deref(), Some("Work"));
    assert_eq!(records[2].group, Some("Reading"));
    assert_eq!(records[5].space.as_deref(), Some("Home \"sweet\" home"));
    assert_eq!(records[10].space.as_deref(), Some("Research"));
    assert_eq!(
        records[10].url,
        Some("https://space11.example/alpha/page"),
        "the current entry (index 2)"
    );
    assert!(records
        .iter()
        .all(|r| r.window == 1 && r.state == TabState::Open));
}

#[test]
fn strings_borrow_from_the_buffer() {
    let json = files().zen_sessions;
    let z = ZenSessions::from_json(json.as_bytes()).unwrap();
    assert!(matches!(z.spaces[0].name, Some(Cow::Borrowed("Work"))));
    assert!(matches!(z.tabs[2].zen_workspace(), Some(Cow::Borrowed(_))));
    // An escape forces a copy.
    assert!(matches!(z.spaces[1].name, Some(Cow::Owned(_))));
}

#[test]
fn values_of_unexpected_types_read_as_absent() {
    let json = br#"{"lastCollected":"17","tabs":{"not":"a list"},"spaces":[1,"x",null,
        {"uuid":7,"name":{"a":[1]},"icon":null,"containerTabId":"2"},{"uuid":"{u}","name":"N"}],
        "folders":"none","groups":[{"id":3,"name":"G"}],"splitViewData":[{},{},5],"extra":[[[]]]}"#;
    let z = ZenSessions::from_json(json).unwrap();
    assert_eq!(
        z.last_collected,
        Some(17),
        "a numeric string, as JavaScript"
    );
    assert!(z.tabs.is_empty() && z.folders.is_empty());
    assert_eq!(
        z.spaces.len(),
        2,
        "elements that are not objects are skipped"
    );
    assert_eq!(z.spaces[0].uuid, None);
    assert_eq!(z.spaces[0].name, None);
    assert_eq!(z.spaces[0].container_tab_id, Some(2));
    assert_eq!(z.space("{u}").and_then(|s| s.name.as_deref()), Some("N"));
    assert_eq!(
        z.group_name("3"),
        Some("G"),
        "a numeric id, as a tab group's"
    );
    assert_eq!(z.split_views, 2);
}

#[test]
fn zen_essential_reads_as_javascript_tests_it() {
    for (value, essential) in [
        (r#""true""#, true),
        ("true", true),
        ("1", true),
        (r#""false""#, true),
        ("{}", true),
        ("[]", true),
        ("null", false),
        ("false", false),
        ("0", false),
        (r#""""#, false),
        ("0.0", false),
    ] {
        let json = format!(r#"{{"tabs":[{{"entries":[],"zenEssential":{value}}}]}}"#);
        let z = ZenSessions::from_json(json.as_bytes()).unwrap();
        assert_eq!(z.tabs[0].zen_essential(), essential, "{value}");
        // The quick tab reader of the session parser agrees.
        let tab = format!(r#"{{"entries":[],"zenEssential":{value},"zenWorkspace":"{{w}}"}}"#);
        assert!(
            crate::session::assert_tab_reader_matches_serde(&tab),
            "{tab}"
        );
    }
}

#[test]
fn what_is_not_zens_file_is_refused_or_told_apart() {
    for (json, why) in [
        (&b"[1,2]"[..], "a JSON object"),
        (b"\"s\"", "a JSON object"),
        (b"{\"windows\":[]}", "a Firefox session"),
        (b"{\"tabs\":[],\"tabs\":[]}", "duplicate field `tabs`"),
        (b"{\"tabs\":[", "EOF"),
        (b"{\"spaces\":\"\xff\"}", "invalid UTF-8"),
    ] {
        let err = ZenSessions::from_json(json).unwrap_err().to_string();
        assert!(err.contains(why), "{json:?}: {err}");
    }
    for json in [&b"{}"[..], b"{\"other\":1}"] {
        let z = ZenSessions::from_json(json).unwrap();
        assert!(!z.has_zen_fields(), "{json:?}");
    }
    for json in [
        &b"{\"lastCollected\":null}"[..],
        b"{\"spaces\":[]}",
        b"{\"tabs\":7}",
    ] {
        assert!(ZenSessions::from_json(json).unwrap().has_zen_fields());
    }
}

#[test]
fn firefoxs_file_of_a_zen_profile_names_each_tabs_space() {
    let json = files().sessionstore;
    let session = Session::from_json(json.as_bytes()).unwrap();
    // The fast paths read the Zen fields (and the windows' spaces) as the
    // reference does.
    crate::session::assert_fast_paths_match_reference(json.as_bytes());
    assert_eq!(
        format!("{session:?}"),
        format!("{:?}", Session::from_json_serial(json.as_bytes()).unwrap())
    );
    assert_eq!(session.windows[0].zen_spaces().len(), 3);
    let records: Vec<_> = session
        .tab_records_with(TabFilter::default(), mark)
        .collect();
    let uuid = "{0d1b6a2c-51f3-4c7e-9a1e-000000000001}";
    assert_eq!(
        records[2].space.as_deref(),
        Some(uuid),
        "the uuid, as the file has it"
    );
    assert!(records[0].essential && records[0].space.is_none());

    // Names from the session's own windows, else from Zen's file.
    let names = SpaceNames::of_session(&session);
    assert_eq!(
        names.resolve(records[2].clone()).space.as_deref(),
        Some("Work")
    );
    let zen_json = files().zen_sessions;
    let zen = ZenSessions::from_json(zen_json.as_bytes()).unwrap();
    let mut from_zen = SpaceNames::default();
    from_zen.add_zen(&zen);
    assert_eq!(from_zen.name(uuid), "Work");
    // A uuid no list names stays as it is.
    assert_eq!(SpaceNames::default().name(uuid), uuid);
}

#[test]
fn the_first_list_added_names_a_space() {
    let now = br#"{"spaces":[{"uuid":"{a}","name":"Now"}]}"#;
    let old = br#"{"spaces":[{"uuid":"{a}","name":"Before"},{"uuid":"{b}","name":"Gone"}]}"#;
    let (now, old) = (
        ZenSessions::from_json(now).unwrap(),
        ZenSessions::from_json(old).unwrap(),
    );
    let mut names = SpaceNames::of_zen(&now);
    names.add_zen(&old);
    assert_eq!(
        (names.name("{a}"), names.name("{b}")),
        ("Now".into(), "Gone".into())
    );
}

#[test]
fn a_firefox_session_without_zen_fields_reads_as_before() {
    let json = ffsession_gen::generate(&ffsession_gen::Spec {
        tabs: 20,
        ..ffsession_gen::Spec::default()
    });
    let session = Session::from_json(json.as_bytes()).unwrap();
    let filter = TabFilter {
        window: None,
        include_closed: true,
    };
    assert!(session
        .tab_records_with(filter, mark)
        .all(|r| r.space.is_none() && !r.essential));
    assert!(session.windows.iter().all(|w| w.zen_spaces().is_empty()));
    assert!(session.windows.iter().all(|w| w.forks.is_empty()));
}

#[test]
fn zens_keys_of_unexpected_types_in_firefoxs_file_read_as_absent() {
    // Every reader keeps the same raw values; Zen's accessors read a value
    // of an unexpected type as absent, never as a reason to refuse the file.
    let json = br#"{"windows":[{"tabs":[
        {"entries":[{"url":"a"}],"zenWorkspace":5,"zenEssential":"true"},
        {"entries":[{"url":"b"}],"zenWorkspace": {"x":[1]} ,"zenEssential":0},
        {"entries":[{"url":"c"}],"zenWorkspace":"{s\u0031}","zenEssential":[]},
        {"entries":[{"url":"d"}],"zenWorkspace":null,"zenEssential":{}}],
        "spaces":"not a list"},
      {"tabs":[],"spaces":[1,{"uuid":"{s1}","name":"One"},{"uuid":2}]}]}"#;
    crate::session::assert_fast_paths_match_reference(json);
    let session = Session::from_json(json).unwrap();
    let tabs = &session.windows[0].tabs;
    let spaces: Vec<_> = tabs.iter().map(|t| t.zen_workspace()).collect();
    assert_eq!(spaces, [None, None, Some(Cow::Borrowed("{s1}")), None]);
    let essential: Vec<_> = tabs.iter().map(|t| t.zen_essential()).collect();
    assert_eq!(essential, [true, false, true, true], "as JavaScript's `if`");
    assert!(session.windows[0].zen_spaces().is_empty());
    assert_eq!(session.windows[1].zen_spaces().len(), 2);
    let names = SpaceNames::of_session(&session);
    let records: Vec<_> = session
        .tab_records_with(TabFilter::default(), mark)
        .map(|r| names.resolve(r))
        .collect();
    assert_eq!(records[2].space.as_deref(), Some("One"));
    for text in [
        r#"{"entries":[],"zenWorkspace":5,"zenEssential":"true"}"#,
        r#"{"zenWorkspace":"{s\u0031}"}"#,
        r#"{"zenEssential": null ,"other":1}"#,
    ] {
        crate::session::assert_tab_reader_matches_serde(text);
    }
}

#[test]
fn a_zen_key_given_twice_is_refused_by_every_reader() {
    let json = br#"{"windows":[{"tabs":[{"entries":[],"zenWorkspace":"a","zenWorkspace":"b"}]}]}"#;
    assert!(Session::from_json_serial(json).is_err());
    assert!(Session::from_json(json).is_err());
    assert!(Session::from_json_one_thread(json).is_err());
    let json = br#"{"windows":[{"tabs":[],"spaces":[],"spaces":[]}]}"#;
    assert!(Session::from_json(json).is_err());
}
