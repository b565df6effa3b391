//! The checks behind the fuzz targets, shared with the regression test.
//!
//! Each fuzz target in `fuzz_targets/` is one line calling a function here, and
//! `crates/ffsession/tests/fuzz_regressions.rs` includes this very file (with
//! `#[path]`) to replay `crates/ffsession/tests/fuzz-regressions/*` through the
//! same steps. So this file may use only what an ffsession integration test can
//! use: `ffsession`, `serde_json` and `csv`.
//!
//! Besides "nothing panics", the checks assert properties the library
//! documents: mozlz4 round-trips, the tab listing has one record per tab the
//! summary counts, and every export format is well formed, keeps one tab per
//! line (line-based formats) or keeps titles and URLs exactly (JSON, JSON Lines,
//! CSV).

use ffsession::error::FormatError;
use ffsession::export::{write_tabs, TabFormat};
use ffsession::format::{self, Format, MOZLZ4_HEADER_LEN, MOZLZ4_MAGIC};
use ffsession::session::{Session, SessionMeta, TabFilter, TabRecord};
use ffsession::zen::{self, ZenSessions, ZenTab};
use ffsession::SessionData;

/// Every export format.
pub const TAB_FORMATS: [TabFormat; 7] = [
    TabFormat::Text,
    TabFormat::Json,
    TabFormat::Jsonl,
    TabFormat::Csv,
    TabFormat::Markdown,
    TabFormat::Urls,
    TabFormat::Bookmarks,
];

/// The `mozlz4` target: detect + decompress (both into a `Vec` and into the
/// library's huge-page `Buffer`) arbitrary bytes; whatever
/// decompresses must compress and decompress back to the same bytes, and so must
/// the raw input itself.
pub fn mozlz4(data: &[u8]) {
    let detected = format::detect(data);
    let decompressed = format::decompress(data);
    // The huge-page buffer path must agree with the `Vec` one, error included.
    match (&decompressed, format::decompress_to_buffer(data)) {
        (Ok(a), Ok(b)) => assert!(
            a[..] == b[..],
            "decompress and decompress_to_buffer disagree"
        ),
        (Err(a), Err(b)) => assert_eq!(*a, b),
        (a, b) => panic!(
            "decompress gave {:?} but decompress_to_buffer gave {:?}",
            a.as_ref().map(Vec::len),
            b.map(|b| b.len())
        ),
    }
    // ffsession's own LZ4 decoder (format/stream.rs) reads what lz4_flex
    // reads, and fails where it fails, with the same message.
    if data.len() >= MOZLZ4_HEADER_LEN && data.starts_with(MOZLZ4_MAGIC) {
        let claimed = u32::from_le_bytes(data[8..MOZLZ4_HEADER_LEN].try_into().unwrap()) as usize;
        if claimed <= (data.len() - MOZLZ4_HEADER_LEN) * 255 + 16 {
            let mut reference = vec![0; claimed];
            let flex = lz4_flex::block::decompress_into(&data[MOZLZ4_HEADER_LEN..], &mut reference);
            match (&decompressed, flex) {
                (Ok(ours), Ok(n)) => assert!(n == claimed && ours[..] == reference[..]),
                (Err(FormatError::SizeMismatch { actual, .. }), Ok(n)) => {
                    assert_eq!(*actual, n)
                }
                (Err(FormatError::Lz4(ours)), Err(e)) => assert_eq!(*ours, e.to_string()),
                (a, b) => panic!("ffsession's decoder gave {a:?}, lz4_flex {b:?}"),
            }
        }
    }
    if let Ok(json) = decompressed {
        assert_eq!(
            detected,
            Ok(Format::Mozlz4),
            "decompress accepted a non-mozlz4 input"
        );
        let claimed = u32::from_le_bytes(data[8..MOZLZ4_HEADER_LEN].try_into().unwrap());
        assert_eq!(
            json.len(),
            claimed as usize,
            "decompressed size differs from the header"
        );
        round_trip(&json);
    }
    round_trip(data);
}

/// `compress` then `decompress` gives back `bytes` (or `compress` refuses bytes
/// that already look compressed).
fn round_trip(bytes: &[u8]) {
    match format::compress(bytes) {
        Ok(packed) => {
            assert_eq!(format::detect(&packed), Ok(Format::Mozlz4));
            let back = format::decompress(&packed).expect("decompress(compress(x)) failed");
            assert!(back == bytes, "decompress(compress(x)) != x");
        }
        Err(FormatError::AlreadyCompressed) => assert!(bytes.starts_with(MOZLZ4_MAGIC)),
        Err(e) => panic!("compress failed on {} bytes: {e}", bytes.len()),
    }
}

/// The `session` target: the whole read path on arbitrary file bytes
/// (`SessionData::from_bytes`, `parse`, `parse_meta`, summary, tab listing,
/// every export), plus `Session::from_json` straight on the raw bytes.
pub fn session(data: &[u8]) {
    session_json(data);
    let Ok(file) = SessionData::from_bytes("fuzz-input", data.to_vec()) else {
        return;
    };
    let meta = file.parse_meta();
    if let Ok(session) = file.parse() {
        let meta = meta.expect("parse_meta refused a session that parse accepted");
        assert_eq!(meta.timestamps, session.session);
        exercise(&session);
    }
}

/// The `session_json` target: `Session::from_json` on the bytes, then the
/// summary, tab listing and every export of what it accepts; and the fast paths
/// (one thread, and two threads split at every tab it finds) must agree with
/// the serial reference.
pub fn session_json(data: &[u8]) {
    ffsession::session::assert_fast_paths_match_reference(data);
    let meta = SessionMeta::from_json(data);
    if let Ok(session) = Session::from_json(data) {
        let meta = meta
            .expect("SessionMeta::from_json refused a session that Session::from_json accepted");
        assert_eq!(meta.timestamps, session.session);
        exercise(&session);
    }
}

/// The `tab` target: the quick tab reader of the fast paths
/// (`session/skim.rs`) reads the tab object the text starts with as
/// serde_json reads it, from the same bytes, or leaves it to serde_json.
/// Also each tab object the text holds, from its `{`.
pub fn tab(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    ffsession::session::assert_tab_reader_matches_serde(text);
    for (at, _) in text.match_indices('{').skip(1).take(16) {
        ffsession::session::assert_tab_reader_matches_serde(&text[at..]);
    }
}

/// The `summarize` target: the summary `ffsession info` counts while the
/// JSON arrives in pieces (`format/summarize.rs`) must be that of the
/// reference parse, or not be given at all. The first byte picks the piece
/// size (1-256 bytes, so values straddle pieces); the rest is session JSON,
/// compressed as Firefox does, counted as it arrives and again once it has
/// all decoded (so that the decoder's thread takes its part wherever a piece
/// starts with a tab), and is also taken as a raw LZ4 block whose first two
/// bytes say what size it claims.
pub fn summarize(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let piece = usize::from(first) + 1;
    for hold in [false, true] {
        format::assert_summary_in_pieces_matches_reference(rest, piece, hold);
    }
    if let [a, b, block @ ..] = rest {
        let claimed = usize::from(u16::from_le_bytes([*a, *b]));
        format::assert_block_in_pieces_matches_reference(block, claimed, piece, true);
    }
}

/// The first byte picks a step size (1-128 bytes, or more for large inputs)
/// and whether each step is made ready only once the parse has read all
/// before (odd, on inputs up to 16 KiB: every cut is read); the rest is session JSON, compressed as Firefox does, parsed while
/// it decodes a step at a time (`format::assert_at_once_matches_reference`,
/// what `SessionData::read_parsed` runs on a large file); and the rest is
/// also read that way as a mozlz4 file of its own (damaged blocks, lying
/// sizes).
pub fn at_once(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    // At most 4,096 steps, and lockstep on small inputs only: in lockstep
    // the walk reads a value again at every step that cuts it.
    let step = (usize::from(first >> 1) + 1).max(rest.len() / 4096);
    let lockstep = first & 1 == 1 && rest.len() <= 16 << 10;
    if let Ok(file) = format::compress(rest) {
        format::assert_at_once_matches_reference(&file, step, lockstep);
    }
    format::assert_at_once_matches_reference(rest, step, false);
}

/// The `zen` target: Zen's sessions file (`zen::ZenSessions`) from arbitrary
/// bytes, as JSON and as a file (mozlz4 or JSON, `SessionData::parse_zen`).
/// Besides no panic: what reads has one tab record per tab, each naming its
/// tab's space by the name this file gives it (else its uuid) and its folder
/// or group; the summary's per-space counts cover each space once and no
/// essential; every export of the records is well formed; and no document
/// is both a Firefox session and Zen's file.
pub fn zen(data: &[u8]) {
    if let Ok(z) = ZenSessions::from_json(data) {
        exercise_zen(&z);
    }
    let Ok(file) = SessionData::from_bytes("fuzz-input", data.to_vec()) else {
        return;
    };
    let zen = file.parse_zen();
    if let Ok(z) = &zen {
        exercise_zen(z);
    }
    if file.parse().is_ok() {
        assert!(
            zen.is_err(),
            "read both as a Firefox session and as Zen's file"
        );
    }
}

/// Summary, tab records and every export of Zen's file `z`.
fn exercise_zen(z: &ZenSessions<'_>) {
    let summary = z.summary();
    let records: Vec<TabRecord<'_>> = z.tab_records().collect();
    assert_eq!(
        records.len(),
        summary.tabs,
        "tab_records and summary disagree"
    );
    assert_eq!(summary.space_tabs.len(), summary.spaces);
    assert!(summary.essential_tabs <= summary.pinned_tabs);
    let in_spaces: usize = summary.space_tabs.iter().map(|s| s.tabs).sum();
    assert!(in_spaces <= summary.tabs - summary.essential_tabs);
    for (r, t) in records.iter().zip(&z.tabs) {
        let workspace = t.zen_workspace();
        let uuid = workspace.as_deref();
        // The first space of that uuid that has a name names it.
        let named = |u: &str| {
            z.spaces
                .iter()
                .find(|s| s.uuid.as_deref() == Some(u) && s.name.is_some())
                .and_then(|s| s.name.as_deref())
        };
        let name = uuid.map(|u| named(u).unwrap_or(u));
        assert_eq!(r.space.as_deref(), name, "a tab's space");
        assert_eq!(r.essential, t.zen_essential());
        assert_eq!(r.url, t.url());
        if let Some(id) = t.group_id.as_deref() {
            assert_eq!(r.group, Some(z.group_name(id).unwrap_or(id)));
        }
    }
    for format in TAB_FORMATS {
        let mut out = Vec::new();
        write_tabs(&mut out, format, records.iter().cloned())
            .unwrap_or_else(|e| panic!("write_tabs({format:?}) into a Vec failed: {e}"));
        let text = std::str::from_utf8(&out)
            .unwrap_or_else(|e| panic!("{format:?} output is not UTF-8: {e}"));
        check_export(format, text, &records);
    }
}

/// Summary, tab records (closed included) and all export formats of `session`.
pub fn exercise(session: &Session<'_>) {
    let summary = session.summary();
    let all = TabFilter {
        window: None,
        include_closed: true,
    };
    // With Zen's marks, which any session may carry.
    let records: Vec<TabRecord<'_>> = session.tab_records_with(all, zen::mark).collect();
    assert_eq!(
        records.len(),
        summary.tabs + summary.closed_tabs + summary.closed_window_tabs,
        "tab_records and summary disagree"
    );
    let open = session.tab_records(TabFilter::default()).count();
    assert_eq!(open, summary.tabs);
    // Per window: its open and closed tabs, nothing from closed windows.
    let per_window: usize = (1..=session.windows.len().min(64))
        .map(|n| {
            session
                .tab_records(TabFilter {
                    window: Some(n),
                    include_closed: true,
                })
                .inspect(|r| assert_eq!(r.window, n))
                .count()
        })
        .sum();
    if session.windows.len() <= 64 {
        assert_eq!(per_window, summary.tabs + summary.closed_tabs);
    }
    for format in TAB_FORMATS {
        let mut out = Vec::new();
        write_tabs(&mut out, format, records.iter().cloned())
            .unwrap_or_else(|e| panic!("write_tabs({format:?}) into a Vec failed: {e}"));
        let text = std::str::from_utf8(&out)
            .unwrap_or_else(|e| panic!("{format:?} output is not UTF-8: {e}"));
        check_export(format, text, &records);
    }
}

/// Format-specific properties of one export.
fn check_export(format: TabFormat, text: &str, records: &[TabRecord<'_>]) {
    let n = records.len();
    let lines_starting = |prefix: &str| text.lines().filter(|l| l.starts_with(prefix)).count();
    match format {
        TabFormat::Text => assert_eq!(text.lines().count(), n, "text: not one line per tab"),
        TabFormat::Urls => assert_eq!(
            text.lines().count(),
            records.iter().filter(|r| r.url.is_some()).count(),
            "urls: not one line per URL"
        ),
        TabFormat::Markdown => {
            assert_eq!(lines_starting("- ["), n, "markdown: not one item per tab")
        }
        TabFormat::Bookmarks => {
            assert_eq!(
                lines_starting("        <DT><A HREF=\""),
                n,
                "bookmarks: not one link per tab"
            );
            assert!(text.ends_with("</DL><p>\n"));
        }
        TabFormat::Json => {
            let v: Vec<serde_json::Value> =
                serde_json::from_str(text).expect("json export does not parse");
            assert_eq!(v.len(), n);
            for (v, r) in v.iter().zip(records) {
                check_json_record(v, r);
            }
        }
        TabFormat::Jsonl => {
            assert_eq!(text.lines().count(), n, "jsonl: not one line per tab");
            for (line, r) in text.lines().zip(records) {
                let v: serde_json::Value =
                    serde_json::from_str(line).expect("jsonl line does not parse");
                check_json_record(&v, r);
                // export.rs writes records itself, promising serde_json's bytes.
                assert_eq!(
                    line,
                    serde_json::to_string(r).expect("serde_json"),
                    "jsonl: not the bytes serde_json writes"
                );
            }
        }
        TabFormat::Csv => {
            let mut reader = csv::Reader::from_reader(text.as_bytes());
            let headers = reader.headers().expect("csv headers").clone();
            let col = |name: &str| headers.iter().position(|h| h == name);
            let rows: Vec<csv::StringRecord> =
                reader.records().map(|r| r.expect("csv row")).collect();
            assert_eq!(rows.len(), n, "csv: not one row per tab");
            if n > 0 {
                let (url, title) = (
                    col("url").expect("url column"),
                    col("title").expect("title column"),
                );
                for (row, r) in rows.iter().zip(records) {
                    assert_eq!(&row[url], r.url.unwrap_or(""), "csv: url changed");
                    assert_eq!(&row[title], r.title.unwrap_or(""), "csv: title changed");
                }
            }
        }
    }
}

fn check_json_record(v: &serde_json::Value, r: &TabRecord<'_>) {
    assert_eq!(v["url"].as_str(), r.url, "json: url changed");
    assert_eq!(v["title"].as_str(), r.title, "json: title changed");
    assert_eq!(v["window"].as_u64(), Some(r.window as u64));
    assert_eq!(v["state"].as_str(), Some(r.state.as_str()));
}

/// The `rescue` target: rescuing arbitrary bytes never panics; whatever it
/// recovers reads as the session it reports, and its mozlz4 decompresses to
/// the same JSON. A file the reader accepts is recovered as it is. And for a
/// valid session, rescuing it cut at several points (plain JSON and mozlz4)
/// recovers only tabs of the original, in order: a clean cut never adds one,
/// and of strict JSON cut as mozlz4, all that the cut file decodes to is
/// trusted.
pub fn rescue(data: &[u8]) {
    let full = check_rescue(data);
    if let Ok(d) = SessionData::from_bytes("fuzz", data.to_vec()) {
        if let Ok(session) = d.parse() {
            let r = full.expect("a readable file is rescued");
            assert!(r.damage.is_none(), "a readable file reported damaged");
            assert_eq!(r.summary, session.summary());
            // Kept as it is, unless the reader had to repair it (`legacy.rs`).
            if Session::from_json(d.json()).is_ok() {
                assert!(r.json()[..] == *d.json(), "a readable file was changed");
            }
            let all = open_urls(&session);
            let json = d.json();
            let packed = format::compress(json).unwrap();
            // Strict JSON (no repair, nothing after the value) is valid as far
            // as any cut of it goes.
            let strict = serde_json::from_slice::<serde_json::Value>(json).is_ok();
            for cut in [json.len() / 3, json.len() / 2, json.len() * 9 / 10] {
                for (prefix, mozlz4) in [
                    (&json[..cut], false),
                    (&packed[..(MOZLZ4_HEADER_LEN + cut).min(packed.len())], true),
                ] {
                    if let Some(r) = check_rescue(prefix) {
                        let json = r.json();
                        let s = Session::from_json(&json).unwrap();
                        let got = open_urls(&s);
                        assert!(
                            got.iter().all(|u| all.contains(u)),
                            "a cut file gave a tab that was not in the original"
                        );
                        // A clean cut of a block ffsession wrote: the
                        // compressor writes it again, so nothing is distrusted.
                        if let (true, true, Some(d)) = (strict, mozlz4, &r.damage) {
                            assert_eq!(
                                d.kept_json_bytes, d.json_offset,
                                "a clean cut was distrusted: {d:?}"
                            );
                        }
                    }
                }
            }
        }
    }
}

/// Every open tab's URL (empty for none).
fn open_urls(s: &Session<'_>) -> Vec<String> {
    s.windows
        .iter()
        .flat_map(|w| w.tabs.iter().map(|t| t.url().unwrap_or("").to_string()))
        .collect()
}

/// Rescue `data` and check what came out; `None` if nothing was.
fn check_rescue(data: &[u8]) -> Option<ffsession::rescue::Rescued> {
    let r = ffsession::rescue::rescue("fuzz", data).ok()?;
    let json = r.json();
    let s = Session::from_json(&json).expect("the rescued JSON reads as a session");
    assert_eq!(s.summary(), r.summary, "the report counts what was rescued");
    let packed = r.to_mozlz4().expect("the rescued JSON compresses");
    assert!(format::decompress(&packed).unwrap() == *json);
    drop(s);
    if let Some(d) = &r.damage {
        assert!(d.kept_json_bytes <= d.json_offset);
        assert!(d.file_offset <= data.len() as u64);
    }
    Some(r)
}
