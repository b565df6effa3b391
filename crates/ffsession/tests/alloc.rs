//! Allocations grow with tabs, never with the payloads the model ignores.
//!
//! A counting global allocator (stats_alloc) measures the allocations made
//! while reading, summarising and listing a generated session, then again with
//! favicons, form data, session storage and cookies ten times larger. The counts
//! must be identical on the serial parser (`Session::from_json_serial`).
//!
//! The default parser of large documents (`Session::from_json`) splits the work
//! at a tab near the middle of the document between two threads; the split
//! moves when the payloads grow, which changes how the two halves' tab vectors
//! grow by a few reallocations. Its counts must stay within
//! [`SPLIT_SLACK`] of each other, however large the payload. (It also makes
//! more allocations than the serial parser, in proportion to tabs: each tab is
//! read by its own serde_json reader, whose scratch buffer for escaped strings
//! starts empty.)
//!
//! Tidying (`ffsession tidy --archive-older-than ... --drop-payload`) also
//! allocates per tab: the same number of allocations, and no more bytes than
//! the larger output takes, however large the payloads it drops.
//! One test only: the counter is global to this binary.

use std::alloc::System;
use std::io;

use ffsession::export::{write_tabs, TabFormat};
use ffsession::session::{Session, TabFilter};
use ffsession::SessionData;
use ffsession_gen::{generate, mozlz4, Spec};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Allocations made by `f`.
fn allocations(f: impl FnOnce()) -> usize {
    let region = Region::new(GLOBAL);
    f();
    region.change().allocations + region.change().reallocations
}

/// Reallocations the two-thread split may add or save: a few per vector that
/// is split (a window's tabs, the array of windows). The walk in pieces has
/// the same leeway, for the tail it may hand to the decoder's thread.
const SPLIT_SLACK: usize = 8;

/// A parser: serial (the allocation model) or the default one.
type Parse = for<'a> fn(&'a [u8]) -> Session<'a>;

fn serial(json: &[u8]) -> Session<'_> {
    Session::from_json_serial(json).unwrap()
}

fn default(json: &[u8]) -> Session<'_> {
    Session::from_json(json).unwrap()
}

fn summarise(file: Vec<u8>, parse: Parse) {
    let data = SessionData::from_bytes("s.jsonlz4", file).unwrap();
    let summary = parse(data.json()).summary();
    assert!(summary.tabs > 0);
}

fn list_tabs(file: Vec<u8>, format: TabFormat, parse: Parse) {
    let data = SessionData::from_bytes("s.jsonlz4", file).unwrap();
    let session = parse(data.json());
    write_tabs(
        io::sink(),
        format,
        session.tab_records(TabFilter {
            window: None,
            include_closed: true,
        }),
    )
    .unwrap();
}

#[test]
fn ignored_payload_tenfold_does_not_change_allocation_counts() {
    // Both sessions are above the 2 MiB where buffers move from the heap to
    // huge-page mappings, so both decompress the same way.
    let spec = Spec {
        tabs: 400,
        ..Spec::default()
    };
    let small_json = generate(&spec);
    assert!(small_json.len() > 2 << 20, "{}", small_json.len());
    let big_json = generate(&spec.clone().with_payload_scaled(10));
    assert!(
        big_json.len() > 5 * small_json.len(),
        "payload did not grow: {} vs {}",
        small_json.len(),
        big_json.len()
    );
    let (small, big) = (mozlz4(small_json.as_bytes()), mozlz4(big_json.as_bytes()));

    let s = allocations(|| summarise(small.clone(), serial));
    let b = allocations(|| summarise(big.clone(), serial));
    assert!(s > 0);
    // Both closures clone their input once; the clone is one allocation on each side.
    assert_eq!(
        s, b,
        "summary: {s} allocations for the small payload, {b} for the tenfold one"
    );
    let (ps, pb) = (
        allocations(|| summarise(small.clone(), default)),
        allocations(|| summarise(big.clone(), default)),
    );
    assert!(
        ps.abs_diff(pb) <= SPLIT_SLACK,
        "two-thread summary: {ps} vs {pb} allocations"
    );

    for format in [
        TabFormat::Json,
        TabFormat::Urls,
        TabFormat::Text,
        TabFormat::Csv,
        TabFormat::Bookmarks,
    ] {
        let s = allocations(|| list_tabs(small.clone(), format, serial));
        let b = allocations(|| list_tabs(big.clone(), format, serial));
        assert_eq!(s, b, "{format:?} listing: {s} vs {b} allocations");
        let ps = allocations(|| list_tabs(small.clone(), format, default));
        let pb = allocations(|| list_tabs(big.clone(), format, default));
        assert!(
            ps.abs_diff(pb) <= SPLIT_SLACK,
            "{format:?} listing, two threads: {ps} vs {pb} allocations"
        );
    }

    // `info` and `tabs --format urls` on a large file: the walk in pieces
    // (`format/summarize.rs`), whose pieces end between tabs.
    for urls in [false, true] {
        let walk = |file: &[u8]| {
            let mut lines = Vec::with_capacity(1 << 20);
            let out = urls.then_some(&mut lines);
            assert!(ffsession::format::summary_in_pieces(file, out).is_some());
        };
        let s = allocations(|| walk(&small));
        let b = allocations(|| walk(&big));
        // Timing moves a few allocations: a thread's first wait on a channel
        // allocates its waiting context, and whether the decoder ever waits
        // for a slot depends on timing; so does whether the walk hands the
        // last pieces to the decoder's thread (the pieces' queue, the split,
        // the list of windows and the lines it counted there).
        assert!(
            s.abs_diff(b) <= SPLIT_SLACK,
            "walk in pieces (URL lines: {urls}): {s} vs {b} allocations"
        );
    }

    // And allocations do grow with tabs: the check above is not vacuous.
    let more_tabs = mozlz4(generate(&Spec { tabs: 1600, ..spec }).as_bytes());
    let m = allocations(|| summarise(more_tabs.clone(), serial));
    assert!(m > s, "4x the tabs made {m} allocations vs {s}");
    let pm = allocations(|| summarise(more_tabs.clone(), default));
    assert!(
        pm > ps + 100,
        "4x the tabs, two threads: {pm} allocations vs {ps}"
    );

    // Tidying: half the tabs archived, the payload of the rest dropped.
    let tidy_rules = ffsession::tidy::TidyRules {
        archive_older_than_ms: Some(30 * 86_400_000),
        drop_payload: true,
        ..Default::default()
    };
    let aged = |json: &str| -> Vec<u8> {
        let mut v: serde_json::Value = serde_json::from_str(json).unwrap();
        let mut n = 0u64;
        for w in v["windows"].as_array_mut().unwrap() {
            for t in w["tabs"].as_array_mut().unwrap() {
                t["lastAccessed"] =
                    serde_json::json!(if n.is_multiple_of(2) { 1_000 } else { NOW });
                n += 1;
            }
        }
        mozlz4(serde_json::to_string(&v).unwrap().as_bytes())
    };
    let (small, big) = (aged(&small_json), aged(&big_json));
    let tidy_allocs = |file: &[u8]| -> (usize, usize, usize) {
        let data = SessionData::from_bytes("s.jsonlz4", file.to_vec()).unwrap();
        let region = Region::new(GLOBAL);
        let out_len = {
            let session = ffsession::tidy::Editable::new(&data).unwrap();
            let plan = ffsession::tidy::plan(&session, &tidy_rules, NOW, false).unwrap();
            assert!(!plan.closed.is_empty());
            ffsession::tidy::render_json(&session, &plan, None).len()
        };
        let c = region.change();
        (c.allocations + c.reallocations, c.bytes_allocated, out_len)
    };
    let (s, s_bytes, s_out) = tidy_allocs(&small);
    let (b, b_bytes, b_out) = tidy_allocs(&big);
    assert_eq!(
        s, b,
        "tidy: {s} allocations for the small payload, {b} for the tenfold one"
    );
    assert!(
        b_bytes <= s_bytes + b_out.saturating_sub(s_out) + 4096,
        "tidy: {b_bytes} bytes allocated for the tenfold payload vs {s_bytes} (outputs {b_out} and {s_out})"
    );
}

/// A fixed "now" for the tidy part (ms since the epoch).
const NOW: u64 = 1_795_300_000_000;
