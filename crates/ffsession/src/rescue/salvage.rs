//! Salvaging complete objects from the readable prefix of session JSON.
//!
//! The prefix is valid JSON up to its end (the caller cuts it where UTF-8 or
//! JSON first goes wrong), but it may end anywhere: inside a string, a tab, a
//! window. This walks it from the top and copies, byte for byte, every value
//! that is complete. Where a value is cut, it goes one level deeper only along
//! the paths that hold tabs (`windows[]`, each window's `tabs` and
//! `_closedTabs`, `_closedWindows[]`, and the `session` object) and drops
//! anything else that is cut. Nothing is re-encoded, so a kept tab keeps every
//! field Firefox wrote (history, form data, storage); nothing is invented.

/// How a cut value is salvaged, by where it stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// The top-level object.
    Top,
    /// `windows` or `_closedWindows`: an array of windows.
    Windows,
    /// One window: its complete members, and complete tabs of a cut `tabs`.
    Window,
    /// `tabs` or `_closedTabs` of a window: complete elements only.
    Tabs,
    /// `session`: its complete members.
    Members,
    /// Anything else: kept only if complete.
    Drop,
}

impl Rule {
    fn member(self, key: &[u8]) -> Rule {
        match (self, key) {
            (Rule::Top, b"windows" | b"_closedWindows") => Rule::Windows,
            (Rule::Top, b"session") => Rule::Members,
            (Rule::Window, b"tabs" | b"_closedTabs") => Rule::Tabs,
            _ => Rule::Drop,
        }
    }

    fn element(self) -> Rule {
        match self {
            Rule::Windows => Rule::Window,
            _ => Rule::Drop,
        }
    }
}

/// What the salvage kept and dropped.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Salvaged {
    /// The salvaged session JSON.
    pub json: Vec<u8>,
    /// Whether the top-level object was complete (nothing was cut).
    pub whole: bool,
    /// What was cut by the damage and dropped, in words.
    pub dropped: Vec<String>,
}

/// Salvage `prefix` (valid JSON as far as it goes, starting at the top-level
/// `{`). `None` if it does not start with an object.
pub(crate) fn salvage(prefix: &[u8]) -> Option<Salvaged> {
    let mut walk = Walk {
        b: prefix,
        pos: 0,
        out: Vec::with_capacity(prefix.len() + 32),
        dropped: Vec::new(),
        path: Vec::new(),
        windows_written: false,
    };
    if walk.peek() != Some(b'{') {
        return None;
    }
    let whole = walk.value(Rule::Top).is_some_and(|v| v.whole);
    if !walk.windows_written {
        // The damage came before any window: an empty list, so that Firefox
        // (and the reader) see a session; closed windows may still be there.
        let at = walk.out.iter().position(|&b| b == b'{').unwrap_or(0) + 1;
        let comma = if walk.out.get(at) == Some(&b'}') {
            ""
        } else {
            ","
        };
        walk.out
            .splice(at..at, format!("\"windows\":[]{comma}").into_bytes());
    }
    if !whole {
        // What Firefox needs of a cut window to defer the session (`defer.rs`).
        let ungrouped = super::defer::make_deferrable(&mut walk.out);
        if ungrouped > 0 {
            walk.dropped.push(format!(
                "the tab group of {ungrouped} tab{} (its window's groups were cut)",
                if ungrouped == 1 { "" } else { "s" }
            ));
        }
    }
    Some(Salvaged {
        json: walk.out,
        whole,
        dropped: walk.dropped,
    })
}

/// A value written to the output.
#[derive(Clone, Copy)]
struct Written {
    /// It was complete in the input.
    whole: bool,
    /// Elements written, for an array.
    elements: usize,
}

struct Walk<'a> {
    b: &'a [u8],
    pos: usize,
    out: Vec<u8>,
    dropped: Vec<String>,
    /// Where the walk is, for the words of `dropped`: (member key or element
    /// index, 1-based).
    path: Vec<Step>,
    windows_written: bool,
}

#[derive(Clone)]
enum Step {
    Key(String),
    Index(usize),
}

impl Walk<'_> {
    fn peek(&mut self) -> Option<u8> {
        while let Some(&b) = self.b.get(self.pos) {
            if !matches!(b, b' ' | b'\t' | b'\r' | b'\n') {
                return Some(b);
            }
            self.pos += 1;
        }
        None
    }

    /// The end of the complete value starting at `self.pos` (after white
    /// space), or `None` if the prefix ends inside it.
    fn complete_end(&self) -> Option<usize> {
        let b = self.b;
        let start = self.pos;
        match *b.get(start)? {
            b'"' => string_end(b, start),
            b'{' | b'[' => {
                let mut depth = 0usize;
                let mut i = start;
                while i < b.len() {
                    match b[i] {
                        b'"' => {
                            i = string_end(b, i)?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                return Some(i + 1);
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
                None
            }
            _ => {
                // A number or literal is complete only if something follows it.
                let n = b[start..]
                    .iter()
                    .position(|c| matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n'))?;
                Some(start + n)
            }
        }
    }

    /// Write the value at `self.pos`: whole if complete, else salvaged by
    /// `rule`. `None` if nothing of it was written.
    fn value(&mut self, rule: Rule) -> Option<Written> {
        self.peek()?;
        if let Some(end) = self.complete_end() {
            let elements = usize::from(self.b[self.pos] == b'[');
            self.out.extend_from_slice(&self.b[self.pos..end]);
            self.pos = end;
            // A whole session has its own `windows` (or is no session).
            if matches!(rule, Rule::Windows | Rule::Top) {
                self.windows_written = true;
            }
            // A whole array's count is not needed by callers: 1 means "some".
            return Some(Written {
                whole: true,
                elements,
            });
        }
        let written = match (rule, self.b[self.pos]) {
            (Rule::Top | Rule::Window | Rule::Members, b'{') => self.object(rule),
            (Rule::Windows | Rule::Tabs, b'[') => {
                let w = self.array(rule);
                if rule == Rule::Windows {
                    self.windows_written = true;
                }
                w
            }
            _ => None,
        };
        if written.is_none() {
            self.dropped.push(self.describe());
        }
        written
    }

    /// A cut object: its complete members, and what `rule` salvages of the
    /// cut one.
    fn object(&mut self, rule: Rule) -> Option<Written> {
        let mark = self.out.len();
        self.pos += 1;
        self.out.push(b'{');
        let mut members = 0;
        let mut tabs = None;
        loop {
            match self.peek() {
                Some(b'"') => {}
                Some(b',') if members > 0 || self.out.len() > mark + 1 => {
                    self.pos += 1;
                    continue;
                }
                _ => break,
            }
            let Some(key_end) = string_end(self.b, self.pos) else {
                break;
            };
            let key = &self.b[self.pos + 1..key_end - 1];
            let key_raw = &self.b[self.pos..key_end];
            self.pos = key_end;
            if self.peek() != Some(b':') {
                break;
            }
            self.pos += 1;
            let member_mark = self.out.len();
            if members > 0 {
                self.out.push(b',');
            }
            self.out.extend_from_slice(key_raw);
            self.out.push(b':');
            self.path
                .push(Step::Key(String::from_utf8_lossy(key).into_owned()));
            let member_rule = rule.member(key);
            let written = self.value(member_rule);
            self.path.pop();
            match written {
                Some(w) => {
                    members += 1;
                    if rule == Rule::Window && key == b"tabs" {
                        tabs = Some(w);
                    }
                    if !w.whole {
                        break;
                    }
                }
                None => {
                    self.out.truncate(member_mark);
                    break;
                }
            }
        }
        if rule == Rule::Window && !tabs.as_ref().is_some_and(|t| t.whole || t.elements > 0) {
            // A window cut before any of its tabs is complete: dropped whole.
            self.out.truncate(mark);
            return None;
        }
        self.out.push(b'}');
        Some(Written {
            whole: false,
            elements: 0,
        })
    }

    /// A cut array: its complete elements, and what `rule` salvages of the cut
    /// one.
    fn array(&mut self, rule: Rule) -> Option<Written> {
        self.pos += 1;
        self.out.push(b'[');
        let mut elements = 0;
        loop {
            match self.peek() {
                Some(b',') if elements > 0 => {
                    self.pos += 1;
                    continue;
                }
                Some(b']') | None => break,
                Some(_) => {}
            }
            let mark = self.out.len();
            if elements > 0 {
                self.out.push(b',');
            }
            self.path.push(Step::Index(elements + 1));
            let written = self.value(rule.element());
            self.path.pop();
            match written {
                Some(w) => {
                    elements += 1;
                    if !w.whole {
                        break;
                    }
                }
                None => {
                    self.out.truncate(mark);
                    break;
                }
            }
        }
        self.out.push(b']');
        Some(Written {
            whole: false,
            elements,
        })
    }

    /// Where the walk is, in words: `tab 3 of window 2`, `window 2's
    /// _closedTabs`, `session`.
    fn describe(&self) -> String {
        let mut words = String::new();
        let mut window = None;
        let mut list: Option<&str> = None;
        for step in &self.path {
            match step {
                Step::Key(k) if window.is_none() && list.is_none() => list = Some(k),
                Step::Index(i)
                    if window.is_none() && matches!(list, Some("windows" | "_closedWindows")) =>
                {
                    window = Some((*i, list.take() == Some("_closedWindows")));
                }
                Step::Key(k) => {
                    if !words.is_empty() {
                        words.push('.');
                    }
                    words.push_str(k);
                }
                Step::Index(i) => words.push_str(&format!("[{i}]")),
            }
        }
        let place = match (window, list) {
            (Some((i, closed)), _) => format!("{}window {i}", if closed { "closed " } else { "" }),
            (None, Some(k)) => k.to_string(),
            (None, None) => "the session".to_string(),
        };
        let what = match words.strip_prefix("tabs[") {
            Some(rest) => format!("tab {}", rest.trim_end_matches(']')),
            None => match words.strip_prefix("_closedTabs[") {
                Some(rest) => format!("closed tab {}", rest.trim_end_matches(']')),
                None => words,
            },
        };
        if what.is_empty() {
            place
        } else {
            format!("{what} of {place}")
        }
    }
}

/// The end (past the closing quote) of the string starting at `start`, or
/// `None` if the prefix ends inside it.
fn string_end(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    loop {
        i += memchr::memchr2(b'"', b'\\', b.get(i..)?)?;
        if b[i] == b'"' {
            return Some(i + 1);
        }
        i += 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(prefix: &str) -> (String, bool, Vec<String>) {
        let s = salvage(prefix.as_bytes()).unwrap();
        (String::from_utf8(s.json).unwrap(), s.whole, s.dropped)
    }

    const FULL: &str = r#"{"version":["sessionrestore",1],"windows":[{"tabs":[{"entries":[{"url":"a"}],"index":1},{"entries":[{"url":"b"}]}],"selected":2,"_closedTabs":[{"state":{"entries":[]}}]},{"tabs":[{"entries":[{"url":"c"}]}]}],"selectedWindow":1,"_closedWindows":[],"session":{"lastUpdate":5,"startTime":1}}"#;

    #[test]
    fn a_whole_session_is_copied_as_is() {
        let (json, whole, dropped) = text(FULL);
        assert_eq!(json, FULL);
        assert!(whole && dropped.is_empty());
    }

    #[test]
    fn every_cut_gives_valid_json_holding_only_complete_tabs() {
        let full: serde_json::Value = serde_json::from_str(FULL).unwrap();
        let all_urls = urls(&full);
        let mut last = 0;
        for cut in 1..FULL.len() {
            let (json, whole, _) = text(&FULL[..cut]);
            assert!(!whole, "cut {cut}");
            let v: serde_json::Value =
                serde_json::from_str(&json).unwrap_or_else(|e| panic!("cut {cut}: {e}: {json}"));
            assert!(v["windows"].is_array(), "cut {cut}: {json}");
            let got = urls(&v);
            assert!(got.iter().all(|u| all_urls.contains(u)), "cut {cut}");
            // Monotonic: a later cut never loses a tab an earlier one had.
            assert!(got.len() >= last, "cut {cut}: {json}");
            last = got.len();
            // Every tab wholly before the cut is there.
            for (i, url) in ["a", "b", "c"].iter().enumerate() {
                let tab_end = FULL.find(&format!("\"url\":\"{url}\"")).unwrap()
                    + FULL[FULL.find(&format!("\"url\":\"{url}\"")).unwrap()..]
                        .find('}')
                        .unwrap()
                    + if i == 0 { 12 } else { 2 };
                if cut > tab_end {
                    assert!(
                        got.contains(&url.to_string()),
                        "cut {cut}: {url} missing from {json}"
                    );
                }
            }
        }
        assert_eq!(last, 3);
    }

    fn urls(v: &serde_json::Value) -> Vec<String> {
        v["windows"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|w| w["tabs"].as_array().cloned().unwrap_or_default())
            .filter_map(|t| t["entries"][0]["url"].as_str().map(str::to_string))
            .collect()
    }

    #[test]
    fn what_was_cut_is_named() {
        let cut = FULL.find(r#""url":"b""#).unwrap() + 3;
        let (json, _, dropped) = text(&FULL[..cut]);
        assert_eq!(
            json,
            r#"{"version":["sessionrestore",1],"windows":[{"tabs":[{"entries":[{"url":"a"}],"index":1}],"_closedTabs":[],"closedGroups":[]}]}"#
        );
        assert_eq!(dropped, ["tab 2 of window 1"]);
        let cut = FULL.find(r#""lastUpdate""#).unwrap() + 14;
        let (json, _, dropped) = text(&FULL[..cut]);
        assert!(
            json.ends_with(r#""_closedWindows":[],"session":{}}"#),
            "{json}"
        );
        assert_eq!(dropped, ["lastUpdate of session"]);
        // Cut in the first tab: no window is kept, but a session still is.
        let (json, _, dropped) = text(&FULL[..60]);
        assert_eq!(json, r#"{"version":["sessionrestore",1],"windows":[]}"#);
        assert_eq!(dropped, ["tab 1 of window 1", "window 1"]);
    }

    #[test]
    fn strings_with_escaped_quotes_and_brackets_are_skipped_whole() {
        let json = r#"{"windows":[{"tabs":[{"entries":[{"url":"a\"]}{[\\","title":"x"}]},{"entries":[{"url":"b"#;
        let (out, _, _) = text(json);
        assert_eq!(
            out,
            r#"{"windows":[{"tabs":[{"entries":[{"url":"a\"]}{[\\","title":"x"}]}],"_closedTabs":[],"closedGroups":[]}]}"#
        );
    }

    #[test]
    fn not_an_object_is_nothing() {
        assert!(salvage(b"[1,2]").is_none());
        assert!(salvage(b"").is_none());
        assert_eq!(text("{").0, r#"{"windows":[]}"#);
    }
}
