//! Session JSON that Firefox wrote and reads back, but serde_json does not
//! take: a copy of it that it does.
//!
//! - Lone UTF-16 surrogates written as escapes (`"\ud83d"`): JavaScript
//!   strings may hold them (a title cut in the middle of an emoji) and
//!   `JSON.stringify` writes them as such since Firefox 64; serde_json refuses
//!   them. Each becomes `\ufffd`, the replacement character, in place (same
//!   length).
//! - Firefox 2 and 3.0 wrote `sessionstore.js` with `toSource()`: a JavaScript
//!   object literal with unquoted keys, which JSON5 reads.
//!
//! Only called when the normal parse fails, so it costs nothing otherwise.

/// A copy of `json` that serde_json can read, or `None` if neither repair
/// applies.
pub(crate) fn normalize(json: &[u8]) -> Option<Vec<u8>> {
    if let Some(fixed) = replace_lone_surrogates(json) {
        return Some(fixed);
    }
    from_js_literal(json)
}

/// `json` with every escaped lone surrogate replaced by `\ufffd`; `None` if it
/// has none.
fn replace_lone_surrogates(json: &[u8]) -> Option<Vec<u8>> {
    let mut out: Option<Vec<u8>> = None;
    let mut i = 0;
    // Escapes only occur in strings, and `\\` is skipped as a pair, so every
    // `\u` found this way is an escape.
    while let Some(off) = json.get(i..).and_then(|rest| memchr::memchr(b'\\', rest)) {
        let at = i + off;
        if json.get(at + 1) != Some(&b'u') {
            i = at + 2;
            continue;
        }
        let unit = |p: usize| -> Option<u16> {
            let hex = json.get(p..p + 4)?;
            u16::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
        };
        let Some(u) = unit(at + 2) else {
            i = at + 2;
            continue;
        };
        let high = (0xD800..0xDC00).contains(&u);
        let low = (0xDC00..0xE000).contains(&u);
        if high
            && json.get(at + 6..at + 8) == Some(b"\\u")
            && unit(at + 8).is_some_and(|v| (0xDC00..0xE000).contains(&v))
        {
            // A proper pair.
            i = at + 12;
            continue;
        }
        if high || low {
            let buf = out.get_or_insert_with(|| json.to_vec());
            buf[at + 2..at + 6].copy_from_slice(b"fffd");
        }
        i = at + 6;
    }
    out
}

/// A JavaScript object literal (unquoted keys) as JSON, read as JSON5.
fn from_js_literal(json: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(json).ok()?;
    // Only what looks like one: `{` then a bare key.
    let after = text.trim_start().strip_prefix('{')?.trim_start();
    if !after.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '$') {
        return None;
    }
    let value: serde_json::Value = json5::from_str(text).ok()?;
    serde_json::to_vec(&value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogates_become_replacement_characters() {
        let json = br#"{"a":"x \ud83d","b":"\ud83e\udd8a","c":"\\ud800","d":"\udc00y"}"#;
        let fixed = normalize(json).unwrap();
        assert_eq!(
            std::str::from_utf8(&fixed).unwrap(),
            r#"{"a":"x \ufffd","b":"\ud83e\udd8a","c":"\\ud800","d":"\ufffdy"}"#
        );
        assert_eq!(normalize(br#"{"b":"\ud83e\udd8a \\u"}"#), None);
    }

    #[test]
    fn javascript_literals_become_json() {
        let js = br#"{windows:[{tabs:[{entries:[{url:"http://a/", title:"\xe9"}], index:1}], _hosts:{"a.b":true}}]}"#;
        let v: serde_json::Value = serde_json::from_slice(&normalize(js).unwrap()).unwrap();
        assert_eq!(v["windows"][0]["tabs"][0]["entries"][0]["title"], "é");
        assert_eq!(normalize(br#"{"windows":[]"#), None);
    }
}
