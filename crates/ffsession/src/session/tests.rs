use super::*;

#[test]
fn empty_windows_is_a_valid_empty_session() {
    let s = Session::from_json(br#"{"windows": []}"#).unwrap();
    assert_eq!(s.windows.len(), 0);
    assert_eq!(s.summary().tabs, 0);
}

#[test]
fn no_windows_array_is_an_error() {
    for bad in [
        &br#"{}"#[..],
        br#"{"windows": 5}"#,
        br#"{"windows": {"tabs": []}}"#,
        br#"{"windows": null}"#,
        br#"[]"#,
        br#""windows""#,
    ] {
        assert!(
            Session::from_json(bad).is_err(),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
}

#[test]
fn unexpected_types_read_as_absent() {
    // Every field the model reads, given a value of every other type: the
    // file is read, and the field is absent (lists empty, flags false).
    let others = [r#""x""#, "true", "-3", "{\"a\":[1]}", "[1,{}]", "null"];
    for other in others {
        let json = format!(
            r#"{{"windows":[{{"tabs":[{{"entries":[{o},{{"url":"http://a/","title":{o}}}],
            "index":{o},"pinned":{o},"hidden":{o},"groupId":{o},"userContextId":{o},
            "lastAccessed":{o},"userTypedValue":{o},"image":{o}}},{o}],
            "selected":{o},"_closedTabs":[{{"state":{o},"title":{o},"closedAt":{o},"pos":{o}}}],
            "groups":[{{"id":{o},"name":{o},"color":{o},"collapsed":{o},"tabs":{o}}}],
            "width":{o},"height":{o},"screenX":{o},"screenY":{o},"sizemode":{o},
            "title":{o},"closedAt":{o}}},{o}],"_closedWindows":{o},"selectedWindow":{o},
            "savedGroups":{o},"session":{o}}}"#,
            o = other
        );
        let s = Session::from_json(json.as_bytes()).unwrap_or_else(|e| panic!("{other}: {e}"));
        assert_eq!(
            format!("{s:?}"),
            format!("{:?}", Session::from_json_serial(json.as_bytes()).unwrap())
        );
        // An object in a list is an element (with nothing we read in it).
        let objects = usize::from(other.starts_with('{'));
        assert_eq!(s.windows.len(), 1 + objects, "{other}");
        let w = &s.windows[0];
        assert_eq!(w.tabs.len(), 1 + objects, "{other}");
        let t = &w.tabs[0];
        assert_eq!(t.url(), Some("http://a/"), "{other}");
        // A string is a title; anything else is none.
        let title = (other == r#""x""#).then_some("x");
        assert_eq!(t.title(), title, "{other}");
        // `true` is a flag and so is a non-zero number, as JavaScript reads
        // it; `-3` is a valid width but no valid count or time.
        let flag = other == "true" || other == "-3";
        assert_eq!((t.pinned, t.hidden), (flag, flag), "{other}");
        assert_eq!(
            (t.index, t.last_accessed, t.user_context_id),
            (None, None, None)
        );
        assert_eq!(w.closed_tabs.len(), 1);
        assert!(w.closed_tabs[0].state.entries.is_empty());
        let width = (other == "-3").then_some(-3);
        assert_eq!((w.width, w.selected, w.closed_at), (width, None, None));
        // In a list given for a list, the object `{}` is one element.
        let in_list = usize::from(other.starts_with('['));
        assert_eq!(
            (s.closed_windows.len(), s.saved_groups.len()),
            (in_list, in_list)
        );
        assert_eq!(w.groups[0].tabs.len(), in_list);
        assert_eq!(s.session, Timestamps::default());
        assert_eq!(s.summary().tabs, 1 + objects);
    }
}

#[test]
fn numbers_written_as_strings_and_flags_as_numbers_are_read() {
    // Firefox 57-era windows wrote their geometry as strings; very old
    // versions wrote some flags as 0/1.
    let json = br#"{"windows":[{"tabs":[{"entries":[{"url":"a"},{"url":"b"}],"index":"1",
        "pinned":1,"hidden":0,"lastAccessed":" 1500000000000 "}],
        "width":"1280","height":"1024","screenX":"-8","screenY":"0","selected":"1",
        "sizemode":"maximized"}],"selectedWindow":"1",
        "session":{"lastUpdate":"1500000000000","startTime":"x"}}"#;
    let s = Session::from_json(json).unwrap();
    let w = &s.windows[0];
    assert_eq!(
        (w.width, w.height, w.screen_x, w.screen_y),
        (Some(1280), Some(1024), Some(-8), Some(0))
    );
    assert_eq!(w.selected, Some(1));
    let t = &w.tabs[0];
    assert_eq!(t.url(), Some("a"));
    assert!(t.pinned && !t.hidden);
    assert_eq!(t.last_accessed, Some(1_500_000_000_000));
    assert_eq!(s.selected_window_index(), Some(1));
    assert_eq!(s.session.last_update, Some(1_500_000_000_000));
    assert_eq!(s.session.start_time, None);
}

#[test]
fn a_window_whose_tabs_are_not_a_list_has_no_tabs() {
    let s = Session::from_json(
        br#"{"windows": [{"tabs": "x"}, 3, {"tabs": [{"entries": [{"url": "u"}]}, "junk"]}]}"#,
    )
    .unwrap();
    let tabs: Vec<usize> = s.windows.iter().map(|w| w.tabs.len()).collect();
    assert_eq!(tabs, [0, 1]);
}

#[test]
fn current_entry_uses_the_clamped_one_based_index() {
    let json = br#"{"windows":[{"tabs":[
        {"entries":[{"url":"a"},{"url":"b"},{"url":"c"}],"index":2},
        {"entries":[{"url":"a"},{"url":"b"}],"index":9},
        {"entries":[{"url":"a"},{"url":"b"}]},
        {"entries":[{"url":"a"},{"url":"b"}],"index":0},
        {"entries":[],"userTypedValue":"typed"}
    ]}]}"#;
    let s = Session::from_json(json).unwrap();
    let urls: Vec<_> = s.windows[0].tabs.iter().map(|t| t.url()).collect();
    assert_eq!(
        urls,
        [Some("b"), Some("b"), Some("b"), Some("b"), Some("typed")]
    );
}

#[test]
fn strings_borrow_unless_escaped() {
    let json = br#"{"windows":[{"tabs":[{"entries":[{"url":"https://x/","title":"say \"hi\" \u00e9"}]}]}]}"#;
    let s = Session::from_json(json).unwrap();
    let e = &s.windows[0].tabs[0].entries[0];
    assert!(matches!(e.url, Some(Cow::Borrowed("https://x/"))));
    assert!(matches!(&e.title, Some(Cow::Owned(t)) if t == "say \"hi\" é"));
}

#[test]
fn nulls_floats_and_unknown_fields_are_tolerated() {
    let json = br#"{"windows":[{"tabs":[{"entries":[{"url":null,"title":null,"x":{"y":[1,2]}}],
        "index":1.0,"pinned":null,"lastAccessed":1700000000000.5,"groupId":7,"userContextId":2}],
        "selected":1,"width":800.0,"future":true}],"session":{"lastUpdate":12.0}}"#;
    let s = Session::from_json(json).unwrap();
    let t = &s.windows[0].tabs[0];
    assert_eq!(t.url(), None);
    assert!(!t.pinned);
    assert_eq!(t.last_accessed, Some(1_700_000_000_000));
    assert_eq!(t.group_id.as_deref(), Some("7"));
    assert_eq!(t.container(), 2);
    assert_eq!(s.session.last_update, Some(12));
}

/// A one-tab session with `image` and the entry's `csp` set to `value`.
fn with_blobs(value: &str) -> Vec<u8> {
    format!(
        r#"{{"windows":[{{"tabs":[{{"entries":[{{"url":"u","csp":{value},"title":"t"}}],"image":{value},"index":1}}]}}]}}"#
    )
    .into_bytes()
}

#[test]
fn unused_blobs_may_hold_any_value() {
    // The fast attempt skips these fields as raw strings and vouches only
    // for strings without control characters, or null; other values go to
    // the reference parser, which takes any JSON value there, as for every
    // field it ignores.
    let cases = [
        (r#""data:image/png;base64,iVBORw0KGgo=""#, true),
        ("null", true),
        (r#""""#, true),
        (r#""say \"hi\" \u00e9 \ud83e\udd8a""#, true),
        (r#""lone \ud800 surrogate""#, true),
        (r#""escaped \n newline""#, false),
        ("5", false),
        (r#"{"a":[1,"b"]}"#, false),
        (r#"["x"]"#, false),
    ];
    for (value, fast) in cases {
        let json = with_blobs(value);
        assert_eq!(Session::from_json_fast(&json).is_some(), fast, "{value}");
        let s = Session::from_json(&json).unwrap();
        assert_eq!(
            (s.windows[0].tabs[0].url(), s.windows[0].tabs[0].title()),
            (Some("u"), Some("t"))
        );
    }
}

#[test]
fn a_control_character_in_an_unused_blob_is_the_reference_error() {
    for value in ["\"a\u{1}b\"", "\"line\nbreak\"", "\"\t\""] {
        let json = with_blobs(value);
        assert!(Session::from_json_fast(&json).is_none(), "{value:?}");
        let err = Session::from_json(&json).unwrap_err().to_string();
        assert!(err.contains("control character"), "{err}");
        assert_eq!(
            err,
            Session::from_json_serial(&json).unwrap_err().to_string()
        );
    }
}

#[test]
fn the_fast_attempt_reads_generated_sessions_as_the_reference_does() {
    for seed in 0..4 {
        let json = ffsession_gen::generate(&ffsession_gen::Spec {
            tabs: 40,
            seed,
            ..ffsession_gen::Spec::default()
        });
        let fast = Session::from_json_fast(json.as_bytes()).expect("fast attempt");
        let reference = Session::from_json_serial(json.as_bytes()).unwrap();
        assert_eq!(format!("{fast:?}"), format!("{reference:?}"));
    }
}

fn nested(prefix: &str, depth: usize, suffix: &str) -> Vec<u8> {
    let mut json = prefix.as_bytes().to_vec();
    json.extend(std::iter::repeat_n(b'[', depth));
    json.extend(std::iter::repeat_n(b']', depth));
    json.extend_from_slice(suffix.as_bytes());
    json
}

#[test]
fn deep_nesting_where_the_model_reads_is_skipped_without_recursion() {
    // A value of the wrong type is drained the way ignored fields are,
    // iteratively, whatever its depth.
    for prefix in [
        r#"{"windows":"#,
        r#"{"windows":[{"tabs":[{"entries":[{"url":"#,
        r#"{"windows":[{"width":"#,
    ] {
        // Close what the prefix opened, innermost first.
        let suffix: String = prefix
            .chars()
            .rev()
            .filter_map(|c| match c {
                '{' => Some('}'),
                '[' => Some(']'),
                _ => None,
            })
            .collect();
        let json = nested(prefix, 100_000, &suffix);
        let parsed = Session::from_json(&json);
        if prefix == r#"{"windows":"# {
            // `windows` itself is an array of arrays: no window in it.
            assert_eq!(parsed.unwrap().windows.len(), 0);
        } else {
            assert_eq!(parsed.unwrap().windows.len(), 1, "{prefix}");
        }
    }
}

#[test]
fn deep_nesting_in_an_ignored_field_is_skipped_without_recursion() {
    // serde_json skips ignored values iteratively: valid JSON, no stack overflow.
    let json = nested(r#"{"windows":[],"x":"#, 100_000, "}");
    assert_eq!(Session::from_json(&json).unwrap().windows.len(), 0);
    assert!(SessionMeta::from_json(&json).is_ok());
}

#[test]
fn the_forks_keys_are_kept_raw_and_nothing_else() {
    // The keys the forks registered (`crate::forks`), each as its raw JSON;
    // any other unknown key is skipped.
    let (tab_key, window_key) = (crate::forks::TAB_KEYS[0], crate::forks::WINDOW_KEYS[0]);
    let json = format!(
        r#"{{"windows":[{{"tabs":[{{"entries":[],"unknown":1,"{tab_key}": [1, "x"] }}],
            "{window_key}":{{"a":null}},"other":2}}]}}"#
    );
    parallel::assert_fast_paths_match_reference(json.as_bytes());
    let s = Session::from_json(json.as_bytes()).unwrap();
    let (w, t) = (&s.windows[0], &s.windows[0].tabs[0]);
    assert_eq!(
        t.forks.iter().collect::<Vec<_>>(),
        [(tab_key, r#"[1, "x"]"#)]
    );
    assert_eq!(
        w.forks.iter().collect::<Vec<_>>(),
        [(window_key, r#"{"a":null}"#)]
    );
    let plain = Session::from_json(br#"{"windows":[{"tabs":[{"x":1}]}]}"#).unwrap();
    assert!(plain.windows[0].forks.is_empty() && plain.windows[0].tabs[0].forks.is_empty());
}
