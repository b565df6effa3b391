//! Allocations grow with tabs, never with the payloads the model ignores.
//!
//! A counting global allocator (stats_alloc) measures the allocations made
//! while reading, summarising and listing a generated session, then again with
//! favicons, form data, session storage and cookies ten times larger. The counts
//! must be identical. One test only: the counter is global to this binary.

use std::alloc::System;
use std::io;

use ffsession::export::{write_tabs, TabFormat};
use ffsession::session::TabFilter;
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

fn summarise(file: Vec<u8>) {
    let data = SessionData::from_bytes("s.jsonlz4", file).unwrap();
    let summary = data.parse().unwrap().summary();
    assert!(summary.tabs > 0);
}

fn list_tabs(file: Vec<u8>, format: TabFormat) {
    let data = SessionData::from_bytes("s.jsonlz4", file).unwrap();
    let session = data.parse().unwrap();
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

    let s = allocations(|| summarise(small.clone()));
    let b = allocations(|| summarise(big.clone()));
    assert!(s > 0);
    // Both closures clone their input once; the clone is one allocation on each side.
    assert_eq!(
        s, b,
        "summary: {s} allocations for the small payload, {b} for the tenfold one"
    );

    for format in [
        TabFormat::Json,
        TabFormat::Urls,
        TabFormat::Text,
        TabFormat::Csv,
        TabFormat::Bookmarks,
    ] {
        let s = allocations(|| list_tabs(small.clone(), format));
        let b = allocations(|| list_tabs(big.clone(), format));
        assert_eq!(s, b, "{format:?} listing: {s} vs {b} allocations");
    }

    // And allocations do grow with tabs: the check above is not vacuous.
    let more_tabs = mozlz4(generate(&Spec { tabs: 1600, ..spec }).as_bytes());
    let m = allocations(|| summarise(more_tabs.clone()));
    assert!(m > s, "4x the tabs made {m} allocations vs {s}");
}
