use super::*;
use ffsession_gen::{generate, mozlz4, piecewise_specs, Spec};

/// Count `json` in pieces of each size, as they arrive and once all have
/// decoded; panics if a count differs from the reference's. Returns how many
/// counts there were (rather than giving up), and in how many of those that
/// waited for the whole decode the decoder's thread walked part of it.
fn counted(json: &[u8], pieces: &[usize]) -> (usize, usize) {
    let mut counts = (0, 0);
    for &piece in pieces {
        for hold in [false, true] {
            if let Some(shared) = assert_summary_in_pieces_matches_reference(json, piece, hold) {
                counts.0 += 1;
                counts.1 += usize::from(shared && hold);
            }
        }
    }
    counts
}

#[test]
fn generated_sessions_are_counted_in_pieces_as_the_reference_counts_them() {
    let mut shared = 0;
    for spec in piecewise_specs() {
        let json = generate(&spec);
        let sizes = [997, 5_000, 70_000, 300_000, PIECE];
        let (counts, held_and_shared) = counted(json.as_bytes(), &sizes);
        assert_eq!(counts, 2 * sizes.len(), "{spec:?}");
        shared += held_and_shared;
    }
    // The decoder's thread walked part of them (and the counts held).
    assert!(shared >= 3, "{shared}");
}

#[test]
fn a_piece_per_byte_counts_as_one_piece_does() {
    let json = concat!(
        r#"{"windows":[{"tabs":[{"entries":[{"url":"http://a/","title":"日本語 🦊"}],"#,
        r#""pinned":true},{"entries":[],"hidden":1}],"_closedTabs":[{}],"groups":[{}],"#,
        r#""title":"ü"}],"_closedWindows":[{"tabs":[{"entries":[]}]}],"#,
        r#""selectedWindow":1,"session":{"lastUpdate":1700000000123,"recentCrashes":0}}  "#,
    );
    let sizes = [1, 2, 3, 5, 8, 64, 4096];
    assert_eq!(counted(json.as_bytes(), &sizes).0, 2 * sizes.len());
}

/// Documents the walk must give up on or count exactly as the reference:
/// cut, padded, duplicated, damaged, and of odd shapes.
fn awkward_documents() -> Vec<Vec<u8>> {
    let whole = generate(&Spec {
        tabs: 3,
        windows: 2,
        favicon_bytes: 100,
        ..Spec::default()
    });
    let mut docs: Vec<Vec<u8>> = Vec::new();
    for cut in (0..whole.len()).step_by(whole.len() / 40) {
        docs.push(whole.as_bytes()[..cut].to_vec());
    }
    for (from, to) in [
        // A second `windows`, `session`, window field, tab field.
        (r#"{"windows":"#, r#"{"windows":[],"windows":"#),
        (r#""session":{"#, r#""session":{},"session":{"#),
        (
            r#""_closedTabs":"#,
            r#""title":"a","title":"b","_closedTabs":"#,
        ),
        (
            r#"{"entries":"#,
            r#"{"pinned":true,"pinned":true,"entries":"#,
        ),
        // A tab that is not an object, a `tabs` that is not an array.
        (r#""tabs":["#, r#""tabs":[7,"#),
        (r#""tabs":["#, r#""tabs":7,"x":["#),
    ] {
        docs.push(whole.replacen(from, to, 1).into_bytes());
    }
    docs.push(format!("{whole} x").into_bytes());
    docs.push(format!("\u{feff}{whole}").into_bytes());
    docs.push(format!(" \n{whole}\n\n").into_bytes());
    let mut invalid = whole.clone().into_bytes();
    let at = invalid.len() / 2;
    invalid[at] = 0xff;
    docs.push(invalid);
    for name in ["eras", "firefox"] {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        for path in ffsession_gen::files_under(&dir.join(name)) {
            if let Ok(data) = SessionData::read(&path) {
                docs.push(data.json().to_vec());
            }
        }
    }
    for (_, body, _) in ffsession_gen::odd_corpus() {
        if let Ok(json) = super::super::decompress(&body) {
            docs.push(json);
        } else {
            docs.push(body);
        }
    }
    docs
}

#[test]
fn awkward_documents_are_never_counted_otherwise_than_by_the_reference() {
    let docs = awkward_documents();
    let mut counts = 0;
    for doc in &docs {
        counts += counted(doc, &[3, 100, 4096, PIECE]).0;
    }
    // Not all given up: the fixtures of Firefox's own eras mostly count.
    assert!(counts > 80, "{counts} of {}", docs.len() * 8);
}

/// `FileSummary::read` of `path`, and what the ordinary read makes of it.
fn both_ways(path: &Path) -> (Result<FileSummary, String>, Result<FileSummary, String>) {
    let summarized = FileSummary::read(path).map_err(|e| e.to_string());
    let ordinary = SessionData::read(path)
        .and_then(|data| {
            let summary = data.parse()?.summary();
            Ok(FileSummary::of(&data, summary))
        })
        .map_err(|e| e.to_string());
    (summarized, ordinary)
}

#[test]
fn a_file_summary_and_url_list_are_those_of_the_ordinary_read_large_small_or_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let large = generate(&Spec::sized(3_000_000));
    assert!(large.len() >= MIN_JSON);
    let small = generate(&Spec::default());
    let mut files = vec![
        ("large.jsonlz4", mozlz4(large.as_bytes())),
        ("small.jsonlz4", mozlz4(small.as_bytes())),
        ("large.js", large.clone().into_bytes()),
    ];
    let good = mozlz4(large.as_bytes());
    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 0x5a;
    files.push(("flipped.jsonlz4", flipped));
    files.push(("cut.jsonlz4", good[..good.len() - 100].to_vec()));
    let mut unclosed = large.clone();
    unclosed.pop();
    files.push(("unclosed.jsonlz4", mozlz4(unclosed.as_bytes())));
    for (name, bytes) in &files {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let (summarized, ordinary) = both_ways(&path);
        assert_eq!(summarized, ordinary, "{name}");
        // The URL list too, error included.
        let listed = open_tab_urls(&path).map_err(|e| e.to_string());
        let written = SessionData::read(&path)
            .and_then(|data| {
                let mut out = Vec::new();
                let session = data.parse()?;
                let open = session.tab_records(crate::session::TabFilter::default());
                export::write_tabs(&mut out, export::TabFormat::Urls, open).unwrap();
                Ok(out)
            })
            .map_err(|e| e.to_string());
        assert!(listed == written, "{name}");
        assert_eq!(listed.is_ok(), summarized.is_ok(), "{name}");
    }
    // The large one was counted in pieces, not read the ordinary way.
    let bytes = Buffer::map_file(&dir.path().join("large.jsonlz4")).unwrap();
    assert_eq!(
        summarize_mozlz4(&bytes, |_, _| {}, &mut Vec::new()).is_some(),
        crate::session::two_cores()
    );
}
