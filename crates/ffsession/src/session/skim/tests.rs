use super::*;

/// serde_json's reading of the tab `text` starts with, in a fast attempt:
/// the tab as `Debug` text and the length it took, or `None` on an error.
fn by_serde(text: &str) -> Option<(String, usize)> {
    de::fast_attempt(|| {
        let mut values = serde_json::Deserializer::from_str(text).into_iter::<Tab>();
        let tab = values.next()?.ok()?;
        Some((format!("{tab:?}"), values.byte_offset()))
    })
}

/// This reader's result for `text`, held to serde_json's; true if it read a tab.
fn agrees(text: &str) -> bool {
    assert_matches_serde(text)
}

/// A tab as Firefox writes it, with fields of every kind the reader meets.
const TAB: &str = r#"{"entries":[{"ID":7,"cacheKey":0,"charset":"UTF-8","docIdentifier":8,"docshellUUID":"{0000-1}","hasUserInteraction":false,"originalURI":"https://a.example/","persist":true,"referrerInfo":"BBoSnxDOS9qmDeAnom1e0AAAAAAAAAAAwAAAAAAAAEYAAAAAAAEBAAAAAAEAIC7W","resultPrincipalURI":null,"title":"A “quoted” title","triggeringPrincipal_base64":"{\"3\":{}}","url":"https://a.example/"},{"url":"https://b.example/?q=1","title":"B","csp":"eyJhIjoxfQ==","structuredCloneState":"AAAA","scroll":{"scroll":"0,120"},"formdata":{"id":{"q":"x"},"xpath":{}},"storage":[1,-2.5e3,0.25,true,null,"s\u00e9"]}],"lastAccessed":1718000000000,"hidden":false,"pinned":true,"attributes":{},"extData":{"k":"v"},"userContextId":0,"index":2,"image":"data:image/png;base64,iVBORw0KGgo=","groupId":"g1","userTypedValue":null,"requestedIndex":0}"#;

#[test]
fn a_tab_as_firefox_writes_it_is_read_here_as_serde_reads_it() {
    assert!(agrees(TAB));
    let (tab, len) = de::fast_attempt(|| tab(TAB)).unwrap();
    assert_eq!(len, TAB.len());
    assert_eq!(tab.entries.len(), 2);
    assert_eq!(tab.entries[0].title.as_deref(), Some("A “quoted” title"));
    assert_eq!(
        tab.entries[1].url.as_deref(),
        Some("https://b.example/?q=1")
    );
    assert_eq!(tab.index, Some(2));
    assert_eq!(tab.last_accessed, Some(1_718_000_000_000));
    assert!(tab.pinned && !tab.hidden);
    assert_eq!(tab.group_id.as_deref(), Some("g1"));
    // Spaces and line breaks anywhere JSON allows them.
    let spaced = TAB.replace(",\"", " ,\r\n\t\"").replace("\":", "\" : ");
    assert!(agrees(&format!("  {spaced} ")));
}

#[test]
fn every_tab_of_a_generated_session_is_read_here() {
    let json = ffsession_gen::generate(&ffsession_gen::Spec::sized(300_000));
    let mut read = 0;
    for at in memchr::memmem::find_iter(json.as_bytes(), crate::session::TAB_START) {
        assert!(agrees(&json[at + 1..]), "tab at {at} left to serde_json");
        read += 1;
    }
    assert!(read > 20, "{read} tabs");
}

#[test]
fn values_of_other_shapes_are_read_by_the_fields_own_reader() {
    // Each still reads here (the one value by serde_json), the same.
    for tab in [
        r#"{"index":"3","pinned":1,"hidden":0,"userContextId":2.0,"lastAccessed":-5}"#,
        r#"{"index":1e2,"groupId":12,"userTypedValue":"a\"b\u00e9\n"}"#,
        r#"{"index":9007199254740993,"lastAccessed":1234567890123456}"#,
        r#"{"entries":[{"url":"http://x/\u0041","title":"T\\"}]}"#,
        r#"{"entries":[1,[2],{"url":"u"},null,"s"]}"#,
        r#"{"entries":null,"pinned":"yes","hidden":{"a":[1]}}"#,
        r#"{"entries":{"url":"u"}}"#,
        r#"{"entries":[{"url":5,"title":["t"],"csp":null}]}"#,
        r#"{"image":null,"entries":[{"referrerInfo":"a\/b"}]}"#,
        r#"{"x":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}"#,
        r#"{"x":"\uD800 lone surrogate, ignored","y":-0.0e-0}"#,
        r#"{}"#,
        r#"{"entries":[]}"#,
        r#"{"entries":[{}]}"#,
    ] {
        assert!(agrees(tab), "{tab} left to serde_json");
    }
}

#[test]
fn every_field_reads_every_kind_of_value_as_serde_does() {
    let values = [
        "null",
        "true",
        "false",
        "0",
        "1",
        "7",
        "1718000000000",
        "-1",
        "1.5",
        "2e1",
        r#""""#,
        r#""s""#,
        r#""12""#,
        r#""e\n""#,
        r#""\u0041""#,
        "[]",
        "[1]",
        "{}",
        r#"{"a":[1]}"#,
    ];
    let tab_fields = crate::session::objects::TAB_FIELDS
        .iter()
        .copied()
        .chain(["other"])
        // The forks' keys, kept as raw JSON.
        .chain(crate::forks::TAB_KEYS.iter().copied())
        .collect::<Vec<_>>();
    let entry_fields = [
        "url",
        "title",
        "csp",
        "referrerInfo",
        "structuredCloneState",
        "other",
    ];
    let mut read = 0;
    for value in values {
        for field in &tab_fields {
            read += usize::from(agrees(&format!(r#"{{"{field}":{value}}}"#)));
        }
        for field in entry_fields {
            read += usize::from(agrees(&format!(r#"{{"entries":[{{"{field}":{value}}}]}}"#)));
        }
    }
    // All but what serde_json rejects: the four blobs (`image`, `csp`,
    // `referrerInfo`, `structuredCloneState`) take only null and the four
    // strings without a control character once unescaped.
    let fields = tab_fields.len() + entry_fields.len();
    assert_eq!(read, values.len() * fields - 4 * (values.len() - 5));
}

#[test]
fn what_serde_rejects_is_not_read_here() {
    for tab in [
        r#"{"index":01}"#,
        r#"{"x":01}"#,
        r#"{"x":1.}"#,
        r#"{"x":1e}"#,
        r#"{"x":-}"#,
        r#"{"x":+1}"#,
        r#"{"x":.5}"#,
        r#"{"x":"a\x"}"#,
        r#"{"x":"a\u12G4"}"#,
        "{\"x\":\"a\u{1}b\"}",
        "{\"url\":\"a\tb\"}",
        "{\"image\":\"a\nb\"}",
        r#"{"x":[1,]}"#,
        r#"{"x":{"a":1,}}"#,
        r#"{"x":{"a" 1}}"#,
        r#"{"x":{1:1}}"#,
        r#"{"x":tru}"#,
        r#"{"x":nul}"#,
        r#"{"x":truex}"#,
        r#"{"x":1,}"#,
        r#"{"x" 1}"#,
        r#"{"entries":[{"url":"a","url":"b"}]}"#,
        r#"{"pinned":true,"pinned":false}"#,
        r#"{"entries":[],"entries":[]}"#,
        r#"{"image":1}"#,
        r#"{"entries":[{"csp":"a\u0001"}]}"#,
        r#"["not a tab"]"#,
        r#"{"x":1"#,
        "",
    ] {
        assert!(!agrees(tab), "{tab} was read here");
        assert_eq!(by_serde(tab), None, "{tab} is read by serde_json");
    }
}

#[test]
fn a_key_with_an_escape_leaves_the_tab_to_serde() {
    // `"u\u0072l"` is `url` to serde_json: this reader does not unescape keys.
    let tab = r#"{"entries":[{"u\u0072l":"https://x/"}]}"#;
    assert!(de::fast_attempt(|| super::tab(tab)).is_some());
    let tab = r#"{"p\u0069nned":true}"#;
    assert!(de::fast_attempt(|| super::tab(tab)).is_none());
    assert!(by_serde(tab).is_some());
}

#[test]
fn a_cut_tab_is_never_read() {
    for end in 0..TAB.len() {
        if TAB.is_char_boundary(end) {
            assert!(!agrees(&TAB[..end]), "read a tab from {:?}", &TAB[..end]);
        }
    }
}

#[test]
fn one_byte_changed_anywhere_reads_as_serde_reads_it() {
    let bytes = TAB.as_bytes();
    let mut read = 0;
    for i in 0..bytes.len() {
        for &b in b"\"\\{}[],: 0-e.nt\x01aE+u/" {
            let mut changed = bytes.to_vec();
            changed[i] = b;
            if let Ok(text) = std::str::from_utf8(&changed) {
                read += usize::from(agrees(text));
            }
        }
    }
    // Most changes land in strings, which still read here.
    assert!(read > bytes.len() * 5, "{read}");
}

#[test]
fn string_end_finds_the_first_quote_backslash_or_control_character() {
    let text = b"abcdefghijklmnopqrstuvwxyz0123456789";
    for at in 0..text.len() {
        for b in [b'"', b'\\', 0, 0x1f, b'\n'] {
            let mut t = text.to_vec();
            t[at] = b;
            for start in 0..=at {
                assert_eq!(string_end(&t, start), at);
            }
            // Bytes that are none of these, around them: 0x20, 0x7f, 0xff.
            t[at] = 0x20;
            assert_eq!(string_end(&t, 0), t.len());
        }
    }
    assert_eq!(string_end("é\u{7f}ÿ\"".as_bytes(), 0), 5);
}
