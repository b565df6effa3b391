use super::*;

#[test]
fn trimmed_range_keeps_n_each_side() {
    assert_eq!(trimmed_range(10, Some(5), 2), Some((2, 7, 3)));
    assert_eq!(trimmed_range(10, None, 2), Some((7, 10, 3)));
    assert_eq!(trimmed_range(3, Some(2), 5), None);
    assert_eq!(trimmed_range(10, Some(1), 0), Some((0, 1, 1)));
    assert_eq!(trimmed_range(4, Some(99), 1), Some((2, 4, 2)));
}

#[test]
fn unknown_fields_survive_and_selected_follows_the_tab() {
    let json = r#"{"version":["sessionrestore",1],"windows":[{"tabs":[
        {"entries":[{"url":"a"}],"x":{"y":[1,2]}},
        {"entries":[{"url":"b"}],"zz":"\u00e9"},
        {"entries":[{"url":"c"}]}],"selected":3,"extra":true}],
        "selectedWindow":1,"_closedWindows":[{"tabs":[]}]}"#;
    let doc = RawDoc::parse(json, None).unwrap();
    let edits = [TabEdit::Remove, TabEdit::Keep, TabEdit::Keep];
    let mut out = Counting {
        inner: Vec::new(),
        count: 0,
    };
    render(
        &mut out,
        &doc.top,
        &[(&doc.windows[0], &edits[..])],
        RenderOptions {
            drop_closed_tabs: true,
            drop_closed_windows: true,
            selected_window: Some(0),
            last_update: None,
        },
    )
    .unwrap();
    let text = String::from_utf8(out.inner).unwrap();
    assert_eq!(out.count, text.len() as u64);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["windows"][0]["tabs"].as_array().unwrap().len(), 2);
    assert_eq!(v["windows"][0]["selected"], 2);
    assert_eq!(v["windows"][0]["extra"], true);
    assert!(text.contains(r#""zz":"\u00e9""#), "{text}");
    assert_eq!(v["_closedWindows"], serde_json::json!([]));
    assert_eq!(v["version"], serde_json::json!(["sessionrestore", 1]));
}
