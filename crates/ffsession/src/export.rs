//! Rendering tab listings: text, JSON, JSON Lines, CSV, Markdown, plain URLs and
//! the Netscape bookmarks HTML that Firefox imports.
//!
//! This module owns output encoding. Every format is correct for titles holding
//! quotes, commas, `<`, `&`, emoji and newlines: structured formats (JSON, JSON
//! Lines, CSV) keep titles exactly; line-based formats (text, Markdown, URLs,
//! bookmarks) turn control characters such as newlines into spaces so that one
//! tab stays one line, and escape what their syntax needs.

use std::borrow::Cow;
use std::io::{self, Write};

use crate::session::{TabRecord, TabState};

/// An output format for tab listings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum TabFormat {
    /// window:position and flags (pinned, closed, ...), title and URL, tab-separated, one tab per line
    #[default]
    Text,
    /// a JSON array of tab objects
    Json,
    /// one JSON object per line
    Jsonl,
    /// CSV with a header row
    Csv,
    /// a Markdown list of links, one heading per window
    Markdown,
    /// URLs only, one per line
    Urls,
    /// Netscape bookmarks HTML that Firefox imports, a folder per window
    Bookmarks,
}

/// Write `records` to `out` in `format`.
pub fn write_tabs<'s, W: Write>(
    out: W,
    format: TabFormat,
    records: impl IntoIterator<Item = TabRecord<'s>>,
) -> io::Result<()> {
    let records = records.into_iter();
    match format {
        TabFormat::Text => write_text(out, records),
        TabFormat::Json => write_json(out, records),
        TabFormat::Jsonl => write_jsonl(out, records),
        TabFormat::Csv => write_csv(out, records),
        TabFormat::Markdown => write_markdown(out, records),
        TabFormat::Urls => write_urls(out, records),
        TabFormat::Bookmarks => write_bookmarks(out, records),
    }
}

/// Replace control characters (newlines, tabs, ...) with spaces.
pub fn one_line(s: &str) -> Cow<'_, str> {
    // Control characters are bytes below 0x20, 0x7F, and U+0080-U+009F, which
    // UTF-8 writes after a 0xC2 byte. A string with none of those bytes has
    // none; only the rest is decoded char by char. (A fold, not `any`: a loop
    // without an early exit runs on whole vectors of bytes.)
    let suspect = s.bytes().fold(false, |found, b| {
        found | (b < 0x20) | (b == 0x7F) | (b == 0xC2)
    });
    if suspect && s.chars().any(char::is_control) {
        Cow::Owned(
            s.chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect(),
        )
    } else {
        Cow::Borrowed(s)
    }
}

fn flags(r: &TabRecord<'_>) -> String {
    let mut f = Vec::new();
    if r.state != TabState::Open {
        f.push(r.state.as_str());
    }
    if r.selected {
        f.push("selected");
    }
    if r.pinned {
        f.push("pinned");
    }
    if r.hidden {
        f.push("hidden");
    }
    if r.essential {
        f.push("essential");
    }
    let space = r
        .space
        .as_deref()
        .map(|s| format!(" ({})", one_line(s)))
        .unwrap_or_default();
    if f.is_empty() {
        space
    } else {
        format!(" [{}]{space}", f.join(","))
    }
}

fn write_text<'s>(
    mut out: impl Write,
    records: impl Iterator<Item = TabRecord<'s>>,
) -> io::Result<()> {
    for r in records {
        writeln!(
            out,
            "{}:{}{}\t{}\t{}",
            r.window,
            r.position,
            flags(&r),
            one_line(r.title.unwrap_or("")),
            one_line(r.url.unwrap_or(""))
        )?;
    }
    out.flush()
}

fn write_json<'s>(
    mut out: impl Write,
    records: impl Iterator<Item = TabRecord<'s>>,
) -> io::Result<()> {
    let mut buf = Vec::with_capacity(512);
    out.write_all(b"[")?;
    for (i, r) in records.enumerate() {
        let separator: &[u8] = if i == 0 { b"\n" } else { b",\n" };
        out.write_all(json_piece(&mut buf, separator, &r, b"")?)?;
    }
    out.write_all(b"\n]\n")?;
    out.flush()
}

fn write_jsonl<'s>(
    mut out: impl Write,
    records: impl Iterator<Item = TabRecord<'s>>,
) -> io::Result<()> {
    let mut buf = Vec::with_capacity(512);
    for r in records {
        out.write_all(json_piece(&mut buf, b"", &r, b"\n")?)?;
    }
    out.flush()
}

/// `before`, `r` as JSON and `after`, in `buf` (reused from record to record).
fn json_piece<'b>(
    buf: &'b mut Vec<u8>,
    before: &[u8],
    r: &TabRecord<'_>,
    after: &[u8],
) -> io::Result<&'b [u8]> {
    buf.clear();
    buf.extend_from_slice(before);
    json_record(buf, r)?;
    buf.extend_from_slice(after);
    Ok(buf)
}

/// Append `r` as one JSON object: the same bytes as `serde_json::to_writer`
/// gives for its `Serialize` impl (a test holds the two equal), in about half
/// the time. serde_json escapes a string byte by byte; titles and URLs seldom
/// need escaping, and those that do not are copied whole here.
fn json_record(buf: &mut Vec<u8>, r: &TabRecord<'_>) -> io::Result<()> {
    let mut number = itoa::Buffer::new();
    let mut num = |buf: &mut Vec<u8>, key: &[u8], n: Option<u64>| {
        buf.extend_from_slice(key);
        match n {
            Some(n) => buf.extend_from_slice(number.format(n).as_bytes()),
            None => buf.extend_from_slice(b"null"),
        }
    };
    num(buf, b"{\"window\":", Some(r.window as u64));
    num(buf, b",\"position\":", Some(r.position as u64));
    buf.extend_from_slice(b",\"state\":\"");
    buf.extend_from_slice(r.state.as_str().as_bytes());
    json_opt_str(buf, b"\",\"url\":", r.url)?;
    json_opt_str(buf, b",\"title\":", r.title)?;
    for (key, value) in [
        (&b",\"pinned\":"[..], r.pinned),
        (b",\"hidden\":", r.hidden),
        (b",\"selected\":", r.selected),
    ] {
        buf.extend_from_slice(key);
        buf.extend_from_slice(if value { b"true" } else { b"false" });
    }
    json_opt_str(buf, b",\"group\":", r.group)?;
    num(buf, b",\"container\":", Some(r.container));
    num(buf, b",\"last_accessed\":", r.last_accessed);
    num(buf, b",\"closed_at\":", r.closed_at);
    num(buf, b",\"history_len\":", Some(r.history_len as u64));
    buf.extend_from_slice(b",\"essential\":");
    buf.extend_from_slice(if r.essential { b"true" } else { b"false" });
    json_opt_str(buf, b",\"space\":", r.space.as_deref())?;
    buf.push(b'}');
    Ok(())
}

/// Append `key`, then `s` as a JSON string (or `null`).
fn json_opt_str(buf: &mut Vec<u8>, key: &[u8], s: Option<&str>) -> io::Result<()> {
    buf.extend_from_slice(key);
    match s {
        None => buf.extend_from_slice(b"null"),
        Some(s) if !json_needs_escape(s.as_bytes()) => {
            buf.push(b'"');
            buf.extend_from_slice(s.as_bytes());
            buf.push(b'"');
        }
        Some(s) => serde_json::to_writer(&mut *buf, s)?,
    }
    Ok(())
}

/// Whether a JSON string needs escapes: a `"`, a `\` or a control character
/// (what serde_json escapes). Checked 16 bytes at a time without early exit
/// inside a block, so that the check compiles to vector instructions.
fn json_needs_escape(bytes: &[u8]) -> bool {
    let special = |b: u8| b < 0x20 || b == b'"' || b == b'\\';
    let mut blocks = bytes.chunks_exact(16);
    let any_block = blocks
        .by_ref()
        .any(|block| block.iter().fold(false, |any, &b| any | special(b)));
    any_block || blocks.remainder().iter().any(|&b| special(b))
}

fn write_csv<'s>(out: impl Write, records: impl Iterator<Item = TabRecord<'s>>) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    for r in records {
        w.serialize(&r).map_err(io::Error::other)?;
    }
    w.flush()
}

fn write_urls<'s>(
    mut out: impl Write,
    records: impl Iterator<Item = TabRecord<'s>>,
) -> io::Result<()> {
    for r in records {
        if let Some(url) = r.url {
            out.write_all(one_line(url).as_bytes())?;
            out.write_all(b"\n")?;
        }
    }
    out.flush()
}

/// The heading of the window (or closed list) a record belongs to.
fn section(r: &TabRecord<'_>) -> (TabState, usize) {
    (r.state, r.window)
}

fn section_title(r: &TabRecord<'_>) -> String {
    match r.state {
        TabState::Open => format!("Window {}", r.window),
        TabState::Closed => format!("Window {}: recently closed tabs", r.window),
        TabState::ClosedWindow => format!("Closed window {}", r.window),
        TabState::Archived => format!("Window {}: archived by ffsession tidy", r.window),
    }
}

/// Escape Markdown inline syntax in a link text.
fn markdown_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in one_line(s).chars() {
        if matches!(
            c,
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '#' | '!' | '&'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A link destination inside `<...>`, where only `<`, `>` and line breaks need care.
fn markdown_url(s: &str) -> String {
    one_line(s).replace('<', "%3C").replace('>', "%3E")
}

fn write_markdown<'s>(
    mut out: impl Write,
    records: impl Iterator<Item = TabRecord<'s>>,
) -> io::Result<()> {
    let mut current = None;
    for r in records {
        if current != Some(section(&r)) {
            if current.is_some() {
                writeln!(out)?;
            }
            writeln!(out, "## {}\n", section_title(&r))?;
            current = Some(section(&r));
        }
        let url = r.url.unwrap_or("");
        let title = r.title.filter(|t| !t.trim().is_empty()).unwrap_or(url);
        writeln!(out, "- [{}](<{}>)", markdown_text(title), markdown_url(url))?;
    }
    out.flush()
}

fn write_bookmarks<'s>(
    mut out: impl Write,
    records: impl Iterator<Item = TabRecord<'s>>,
) -> io::Result<()> {
    use html_escape::{encode_double_quoted_attribute as attr, encode_text as text};
    out.write_all(
        b"<!DOCTYPE NETSCAPE-Bookmark-file-1>\n\
          <!-- This is an automatically generated file.\n     It will be read and overwritten.\n     DO NOT EDIT! -->\n\
          <META HTTP-EQUIV=\"Content-Type\" CONTENT=\"text/html; charset=UTF-8\">\n\
          <TITLE>Bookmarks</TITLE>\n<H1>Bookmarks</H1>\n<DL><p>\n",
    )?;
    let mut current = None;
    for r in records {
        if current != Some(section(&r)) {
            if current.is_some() {
                out.write_all(b"    </DL><p>\n")?;
            }
            writeln!(
                out,
                "    <DT><H3>{}</H3>\n    <DL><p>",
                text(&section_title(&r))
            )?;
            current = Some(section(&r));
        }
        let url = r.url.unwrap_or("");
        let title = r.title.filter(|t| !t.trim().is_empty()).unwrap_or(url);
        let added = r
            .last_accessed
            .map(|ms| format!(" ADD_DATE=\"{}\"", ms / 1000))
            .unwrap_or_default();
        writeln!(
            out,
            "        <DT><A HREF=\"{}\"{added}>{}</A>",
            attr(&one_line(url)),
            text(&one_line(title))
        )?;
    }
    if current.is_some() {
        out.write_all(b"    </DL><p>\n")?;
    }
    out.write_all(b"</DL><p>\n")?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRICKY: &str = "a \"quoted\", <b> & 'x'\nline2 🦊 | [md] *x*";

    #[test]
    fn one_line_replaces_exactly_the_control_characters() {
        // C0 controls, DEL, C1 controls (after a 0xC2 byte in UTF-8), and
        // their neighbours that are not controls: space, U+00A0, U+00FF, é.
        let cases = [
            "plain https://x.test/",
            "tab\there",
            "new\nline\r",
            "del\u{7f}",
            "c1 \u{80}\u{85}\u{9f}",
            "not c1 \u{a0}\u{ff}é 🦊",
            "\u{1f}\u{20}\u{7e}",
        ];
        for s in cases {
            let want: String = s
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            let got = one_line(s);
            assert_eq!(got, want, "{s:?}");
            assert_eq!(
                matches!(got, Cow::Borrowed(_)),
                want == s,
                "{s:?} is copied only if changed"
            );
        }
    }

    fn rec(title: &'static str, url: &'static str) -> TabRecord<'static> {
        TabRecord {
            window: 1,
            position: 1,
            state: TabState::Open,
            url: Some(url),
            title: Some(title),
            pinned: false,
            hidden: false,
            selected: false,
            group: None,
            container: 0,
            last_accessed: Some(1_700_000_000_000),
            closed_at: None,
            history_len: 1,
            essential: false,
            space: None,
        }
    }

    fn render(format: TabFormat) -> String {
        let mut out = Vec::new();
        write_tabs(
            &mut out,
            format,
            [rec(TRICKY, "https://x.test/?a=1&b=\"2\"")],
        )
        .unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn json_and_jsonl_keep_titles_exactly() {
        let v: serde_json::Value = serde_json::from_str(&render(TabFormat::Json)).unwrap();
        assert_eq!(v[0]["title"], TRICKY);
        let line: serde_json::Value =
            serde_json::from_str(render(TabFormat::Jsonl).trim_end()).unwrap();
        assert_eq!(line["title"], TRICKY);
        assert_eq!(line["state"], "open");
    }

    /// Strings that need escaping at every position of the 16-byte blocks
    /// and of the remainder, and ones that do not.
    fn titles_to_escape() -> Vec<String> {
        let mut titles = vec![TRICKY.to_string(), String::new(), "\u{7f}é🦊".into()];
        for len in [1, 15, 16, 17, 32, 35] {
            for at in 0..len {
                for special in ["\"", "\\", "\n", "\u{1}", "\u{1f}"] {
                    let mut title = "x".repeat(len);
                    title.replace_range(at..at + 1, special);
                    titles.push(title);
                }
            }
        }
        // And random mixes of them, with multi-byte characters.
        let alphabet = ['a', 'é', '🦊', '"', '\\', '\n', '\u{1}', '\u{7f}', '/', '<'];
        let mut rng = fastrand::Rng::with_seed(3);
        for _ in 0..2_000 {
            let len = rng.usize(0..70);
            titles.push(
                (0..len)
                    .map(|_| alphabet[rng.usize(..alphabet.len())])
                    .collect(),
            );
        }
        titles
    }

    #[test]
    fn json_records_are_the_bytes_serde_json_writes() {
        let json = ffsession_gen::generate(&ffsession_gen::Spec {
            tabs: 60,
            ..ffsession_gen::Spec::default()
        });
        let session = crate::session::Session::from_json(json.as_bytes()).unwrap();
        let filter = crate::session::TabFilter {
            window: None,
            include_closed: true,
        };
        let mut records: Vec<_> = session.tab_records(filter).collect();
        assert!(records.len() > 60);
        let titles = titles_to_escape();
        for (i, title) in titles.iter().enumerate() {
            let some = |n: u64| (i % 2 == 0).then_some(n);
            records.push(TabRecord {
                window: i,
                position: usize::MAX - i,
                state: [TabState::Open, TabState::Closed, TabState::ClosedWindow][i % 3],
                url: (i % 3 != 0).then_some(title.as_str()),
                title: Some(title),
                pinned: i % 2 == 0,
                hidden: i % 3 == 0,
                selected: i % 5 == 0,
                group: (i % 4 == 0).then_some(title.as_str()),
                container: u64::MAX - i as u64,
                last_accessed: some(i as u64),
                closed_at: some(u64::MAX),
                history_len: 0,
                essential: i % 7 == 0,
                space: (i % 3 == 1).then_some(title.as_str().into()),
            });
        }
        for r in &records {
            let mut ours = Vec::new();
            json_record(&mut ours, r).unwrap();
            let serde = serde_json::to_vec(r).unwrap();
            assert_eq!(
                String::from_utf8(ours).unwrap(),
                String::from_utf8(serde).unwrap()
            );
        }
    }

    #[test]
    fn csv_keeps_titles_exactly() {
        let out = render(TabFormat::Csv);
        let mut r = csv::Reader::from_reader(out.as_bytes());
        let headers = r.headers().unwrap().clone();
        let title_col = headers.iter().position(|h| h == "title").unwrap();
        let row = r.records().next().unwrap().unwrap();
        assert_eq!(&row[title_col], TRICKY);
    }

    #[test]
    fn line_formats_keep_one_tab_per_line() {
        for f in [TabFormat::Text, TabFormat::Urls] {
            assert_eq!(render(f).lines().count(), 1, "{f:?}");
        }
        let text = render(TabFormat::Text);
        assert!(text.contains("a \"quoted\", <b> & 'x' line2 🦊"), "{text}");
    }

    #[test]
    fn markdown_escapes_link_syntax() {
        let md = render(TabFormat::Markdown);
        assert!(md.starts_with("## Window 1\n\n"));
        assert!(md.contains("- [a \"quoted\", \\<b\\>"), "{md}");
        assert!(
            md.contains(r#"\<b\> \& 'x' line2 🦊 \| \[md\] \*x\*](<https://x.test/?a=1&b="2">)"#),
            "{md}"
        );
    }

    #[test]
    fn bookmarks_escape_html() {
        let html = render(TabFormat::Bookmarks);
        assert!(
            html.contains(
                "<A HREF=\"https://x.test/?a=1&amp;b=&quot;2&quot;\" ADD_DATE=\"1700000000\">"
            ),
            "{html}"
        );
        assert!(
            html.contains(">a \"quoted\", &lt;b&gt; &amp; 'x' line2 🦊 | [md] *x*</A>"),
            "{html}"
        );
        assert!(html.contains("<H3>Window 1</H3>"));
    }
}
