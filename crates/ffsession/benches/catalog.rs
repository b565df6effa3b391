//! The tab index at scale: COUNT snapshots (default 10,000) of a 500-tab
//! session in two windows, each differing from the one before the way
//! `recovery.jsonlz4` does: 2-5 tabs navigate to new URLs (new entries), and
//! every tenth snapshot or so a tab moves to the other window.
//!
//! Prints the time per snapshot (`Store::add_snapshot`, indexing included),
//! the catalog's figures (size on disk after a WAL checkpoint, `tab_entries`,
//! `tab_runs`, snapshots, index rows per snapshot) at 1,000, 5,000 and 10,000
//! snapshots, the search latency of ~20 varied queries, and the time per
//! snapshot of `Store::reindex_tabs`. The session JSON is written by hand
//! (one history entry per tab, nothing else) so generating it costs little.
//!
//! Run: `cargo bench -p ffsession --bench catalog [-- COUNT]`

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use ffsession::sources::SourceKind;
use ffsession::store::{SnapshotSource, Store, TimeRange, CATALOG_FILE, INDEX_FILE};

const START_MS: u64 = 1_795_300_000_000;
const INTERVAL_MS: u64 = 15_000;
const TABS: u64 = 500;
const CHECKPOINTS: [usize; 3] = [1_000, 5_000, 10_000];

const WORDS: [&str; 40] = [
    "rust", "sqlite", "firefox", "session", "recipe", "weather", "kernel", "linux", "travel",
    "hotel", "flight", "python", "garden", "tomato", "bicycle", "repair", "guitar", "chord",
    "museum", "opening", "hours", "budget", "invoice", "tax", "mortgage", "rates", "football",
    "score", "election", "results", "camera", "review", "laptop", "battery", "coffee", "grinder",
    "piano", "lesson", "marathon", "training",
];
const SITES: [&str; 12] = [
    "github.com",
    "stackoverflow.com",
    "wikipedia.org",
    "news.example",
    "docs.rs",
    "youtube.com",
    "reddit.com",
    "mozilla.org",
    "shop.example",
    "bank.example",
    "maps.example",
    "mail.example",
];

fn count() -> usize {
    std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(10_000)
}

/// Page `n`'s (URL, title): a site, two words, and the number.
fn page(n: u64) -> (String, String) {
    let w = |k: u64| WORDS[(k % WORDS.len() as u64) as usize];
    let site = SITES[(n % SITES.len() as u64) as usize];
    (
        format!("https://{site}/{}/{n}", w(n / 7)),
        format!("{} {} notes {n}", w(n / 3), w(n * 7 + 1)),
    )
}

/// The session JSON of two windows of page numbers.
fn session_json(windows: &[Vec<u64>; 2], last_update: u64) -> Vec<u8> {
    let mut s = String::with_capacity(64 * 1024);
    let _ = write!(
        s,
        "{{\"version\":[\"sessionrestore\",1],\"session\":{{\"lastUpdate\":{last_update}}},\"windows\":["
    );
    for (w, tabs) in windows.iter().enumerate() {
        if w > 0 {
            s.push(',');
        }
        s.push_str("{\"tabs\":[");
        for (i, &n) in tabs.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            let (url, title) = page(n);
            let _ = write!(
                s,
                "{{\"entries\":[{{\"url\":\"{url}\",\"title\":\"{title}\"}}],\"index\":1,\"lastAccessed\":{}}}",
                last_update - (n % 1000) * 1000
            );
        }
        s.push_str("],\"selected\":1,\"_closedTabs\":[]}");
    }
    s.push_str("],\"selectedWindow\":1,\"_closedWindows\":[]}");
    s.into_bytes()
}

/// `(bytes on disk, tab_entries, tab_runs, snapshots)` of the catalog, after
/// folding the WAL into it.
fn catalog_figures(dir: &Path) -> (u64, i64, i64, i64) {
    let path = dir.join(CATALOG_FILE);
    let index = dir.join(INDEX_FILE);
    let conn = rusqlite::Connection::open(&path).expect("open the catalog");
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .expect("checkpoint");
    // The tab index is in its own file (store version 5).
    conn.execute("ATTACH DATABASE ?1 AS idx", [index.to_string_lossy()])
        .expect("attach the tab index");
    conn.query_row("PRAGMA idx.wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .expect("checkpoint the index");
    let (entries, runs, snapshots) = conn
        .query_row(
            "SELECT (SELECT count(*) FROM idx.tab_entries), (SELECT count(*) FROM idx.tab_runs),
                    (SELECT count(*) FROM snapshots)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("count rows");
    let size = [&path, &index]
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .sum();
    (size, entries, runs, snapshots)
}

fn print_figures(dir: &Path) {
    let (size, entries, runs, snapshots) = catalog_figures(dir);
    println!(
        "{snapshots:>7} snapshots: catalog {:>8.1} MiB, {entries:>7} tab_entries, {runs:>7} tab_runs, \
         {:.2} index rows per snapshot ({:.0} bytes per snapshot)",
        size as f64 / (1024.0 * 1024.0),
        (entries + runs) as f64 / snapshots as f64,
        size as f64 / snapshots as f64,
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let count = count();
    let tmp = tempfile::tempdir().expect("temporary folder");
    let dir = tmp.path().join("store");
    let mut store = Store::create_or_open(&dir).expect("create the store");
    let mut rng = fastrand::Rng::with_seed(42);
    let mut windows: [Vec<u64>; 2] = [(0..300).collect(), (300..TABS).collect()];
    let mut next_page = TABS;

    println!("adding {count} snapshots of {TABS} tabs (2-5 new URLs each, a move every ~10)");
    let mut adding = Duration::ZERO;
    for i in 0..count {
        if i > 0 {
            for _ in 0..rng.usize(2..=5) {
                let w = rng.usize(..2);
                let t = rng.usize(..windows[w].len());
                windows[w][t] = next_page;
                next_page += 1;
            }
            if rng.usize(..10) == 0 {
                let from = rng.usize(..2);
                if windows[from].len() > 1 {
                    let t = rng.usize(..windows[from].len());
                    let n = windows[from].remove(t);
                    let to = &mut windows[1 - from];
                    let at = rng.usize(..=to.len());
                    to.insert(at, n);
                }
            }
        }
        let now = START_MS + i as u64 * INTERVAL_MS;
        let source = SnapshotSource {
            bytes: session_json(&windows, now),
            profile: "bench".into(),
            file_name: "sessionstore-backups/recovery.jsonlz4".into(),
            kind: SourceKind::Recovery,
            mtime_ms: Some(now),
        };
        let started = Instant::now();
        let info = store.add_snapshot(source, now).expect("add a snapshot");
        adding += started.elapsed();
        assert!(info.is_ok(), "snapshot {i} did not verify");
        if CHECKPOINTS.contains(&(i + 1)) && i + 1 != count {
            print_figures(&dir);
        }
    }
    println!(
        "add_snapshot (indexing included): {:.2} ms per snapshot",
        ms(adding) / count as f64
    );
    print_figures(&dir);

    let queries = [
        "rust",
        "sqlite",
        "firefox",
        "github",
        "wikipedia",
        "notes",
        "garden tomato",
        "\"coffee grinder\"",
        "bicycle OR guitar",
        "mort*",
        "rates NOT tax",
        "title:marathon",
        "url:docs",
        "4242",
        "notes 99",
        "stackoverflow kernel",
        "zzzznotthere",
        "mail",
        "pian*",
        "election results",
    ];
    let mut times = Vec::new();
    let mut total_hits = 0;
    for q in queries {
        let started = Instant::now();
        let hits = store
            .search_tabs(q, TimeRange::default(), 50)
            .unwrap_or_else(|e| panic!("search {q:?}: {e}"));
        times.push((started.elapsed(), q.to_owned()));
        total_hits += hits.len();
    }
    let range = TimeRange {
        since_ms: Some(START_MS + count as u64 * INTERVAL_MS / 2),
        until_ms: None,
    };
    for q in ["rust", "notes", "github"] {
        let started = Instant::now();
        store.search_tabs(q, range, 50).expect("search in a range");
        times.push((started.elapsed(), format!("{q} (newer half)")));
    }
    times.sort_unstable();
    let (max, slowest) = times.last().expect("some queries");
    println!(
        "search_tabs (limit 50, {} queries, {total_hits} hits): median {:.2} ms, max {:.2} ms ({slowest:?})",
        times.len(),
        ms(times[times.len() / 2].0),
        ms(*max),
    );
    let started = Instant::now();
    let history = store
        .tab_history(&page(TABS - 1).0)
        .expect("history of a tab");
    println!(
        "tab_history: {:.2} ms ({} stretches)",
        ms(started.elapsed()),
        history.len()
    );

    let started = Instant::now();
    let report = store.reindex_tabs(|_, _| {}).expect("reindex");
    let took = started.elapsed();
    println!(
        "reindex_tabs: {:.2} ms per snapshot ({} snapshots, {} runs, {} entries)",
        ms(took) / report.snapshots as f64,
        report.snapshots,
        report.runs,
        report.entries
    );
}
