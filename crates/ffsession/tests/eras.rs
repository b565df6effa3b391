//! Session files of every Firefox era, in the shapes found in real files that
//! people committed to public repositories (2009-2026) and in Firefox's own
//! source. The fixtures in `tests/fixtures/eras/` were written for this test
//! with placeholder URLs (no real session is committed); each file's name says
//! which Firefox versions wrote that shape.

mod common;

use ffsession::SessionData;

/// (file, open windows, open tabs, URL of the first open tab)
const ERAS: &[(&str, usize, usize, Option<&str>)] = &[
    // Firefox 2 and 3.0: `toSource()`, a JavaScript literal with bare keys.
    (
        "S01_ff2-3.0_toSource.json",
        1,
        1,
        Some("http://example.com/1"),
    ),
    // Firefox 3.5-3.6: JSON wrapped in parentheses.
    (
        "S02_ff3.5-3.6_parens.json",
        1,
        1,
        Some("http://example.com/1"),
    ),
    (
        "S03_ff2-3.0_spaced_json.json",
        1,
        1,
        Some("http://example.com/1"),
    ),
    // Firefox 3.5-57, maximized windows: geometry as strings (59 of 146 real
    // files were rejected for this before).
    (
        "S04_ff4-57_maximized_string_dims.json",
        1,
        1,
        Some("http://example.com/1"),
    ),
    // HiDPI: decimal strings.
    (
        "S05_ff5x_hidpi_decimal_string_dims.json",
        1,
        1,
        Some("http://example.com/1"),
    ),
    ("S06_ff38-47_empty_entries_index_null.json", 1, 1, None),
    (
        "S07_ff121_empty_entries_no_index.json",
        1,
        1,
        Some("example.com/1"),
    ),
    ("S08_ff10x_window_no_tabs_selected_-1.json", 1, 0, None),
    ("S09_ff121_closed_window_without_dims.json", 0, 0, None),
    (
        "S10_ff3.6-28_closedtab_no_closedAt.json",
        1,
        1,
        Some("http://example.com/1"),
    ),
    (
        "S11_ff12x_sourceWindowId_int_and_string.json",
        1,
        1,
        Some("http://example.com/1"),
    ),
    (
        "S12_ff20_closedtab_pageStyle_object.json",
        1,
        1,
        Some("http://example.com/1"),
    ),
    (
        "S13_ff3.x_session_state_no_lastUpdate.json",
        1,
        1,
        Some("http://example.com/1"),
    ),
    (
        "S14_ff4-era_frames_children_no_title.json",
        1,
        1,
        Some("http://example.com/4"),
    ),
    (
        "S15_ff2x_lastSessionState_and_popup.json",
        1,
        1,
        Some("http://example.com/1"),
    ),
    (
        "S16_ff137_tab_groups.json",
        1,
        1,
        Some("http://example.com/1"),
    ),
    (
        "S17_ff3.5_no_hidden_formDataSaved.json",
        1,
        1,
        Some("http://example.com/1"),
    ),
    (
        "S18_ff13x_sidebar_object_closedwindow_groups.json",
        0,
        0,
        None,
    ),
    (
        "S19_negative_string_screenX.json",
        1,
        1,
        Some("http://example.com/1"),
    ),
    // Firefox 64+ writes a lone surrogate (a title cut inside an emoji) as an
    // escape, which serde_json refuses: read as U+FFFD.
    (
        "S20_lone_surrogate_escape.json",
        1,
        1,
        Some("http://example.com/1"),
    ),
];

#[test]
fn every_era_reads_as_firefox_reads_it() {
    let dir = common::fixture("eras");
    let on_disk = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(on_disk, ERAS.len(), "a fixture without an expectation");
    for &(name, windows, tabs, first_url) in ERAS {
        let data = SessionData::read(dir.join(name)).unwrap();
        let s = data.parse().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(s.windows.len(), windows, "{name}");
        let summary = s.summary();
        assert_eq!(summary.tabs, tabs, "{name}");
        let first = s.windows.iter().flat_map(|w| &w.tabs).next();
        assert_eq!(first.and_then(|t| t.url()), first_url, "{name}");
        assert!(data.parse_meta().is_ok(), "{name}");
        // The same bytes compressed as mozlz4 read the same.
        let packed = ffsession::format::compress(data.json()).unwrap();
        let again = SessionData::from_bytes(name, packed).unwrap();
        assert_eq!(again.parse().unwrap().summary(), summary, "{name}");
    }
}

#[test]
fn window_geometry_written_as_strings_is_read() {
    let dir = common::fixture("eras");
    for (name, want) in [
        ("S04_ff4-57_maximized_string_dims.json", (1280, 1024, 0)),
        ("S05_ff5x_hidpi_decimal_string_dims.json", (1193, 691, 0)),
        ("S19_negative_string_screenX.json", (1296, 1000, -8)),
    ] {
        let data = SessionData::read(dir.join(name)).unwrap();
        let s = data.parse().unwrap();
        let w = &s.windows[0];
        assert_eq!(
            (w.width, w.height, w.screen_x),
            (Some(want.0), Some(want.1), Some(want.2)),
            "{name}"
        );
    }
}

#[test]
fn a_lone_surrogate_reads_as_the_replacement_character() {
    let dir = common::fixture("eras");
    let data = SessionData::read(dir.join("S20_lone_surrogate_escape.json")).unwrap();
    let s = data.parse().unwrap();
    assert_eq!(s.windows[0].tabs[0].title(), Some("Example \u{fffd}"));
}
