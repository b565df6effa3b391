//! The backup store on a realistic history: a generated ~4 MB session (about
//! 400 tabs), then snapshots that each differ from the one before the way
//! Firefox's `recovery.jsonlz4` does every 15 seconds: `lastUpdate` moves on
//! and 2-3 tabs change (a tab navigates to a new page, sometimes with a new
//! site's favicon; a tab's URL is replaced; a tab opens; a tab closes into the
//! window's recently-closed list).
//!
//! Prints the store's size on disk (chunk files + catalog) against the same
//! number of full mozlz4 files, the time per snapshot, and checks that a few
//! snapshots read back byte-identical.
//!
//! Then `check_store` reads and verifies that whole store (MB/s of chunk files
//! read), and the cost of reading each snapshot back before it is recorded is
//! measured on a 4 MB and a 40 MB session: two stores take the same snapshots
//! in alternation, one with the read-back and one without
//! (`Store::set_read_back_for_bench(false)`, as ffsession did before it read
//! back), both for a session with 2-3 tabs changed and for the same file again.
//!
//! Run: `cargo bench -p ffsession --bench store [-- COUNT] [-- --avg-kib N]`
//! (COUNT defaults to 1000; `--avg-kib` sets the average chunk size, with
//! min = avg/4 and max = avg*4, to compare chunker parameters;
//! `--read-back-only` runs only the read-back measurement).
//!
//! `--verify-only`: what `watch` pays at start and then daily to read back
//! the newest snapshot of each file it relies on (`watch::verify_newest`),
//! on a store holding a 4 MB and a 40 MB session (a store with a year of
//! snapshots costs the same: only the newest of each file is read), warm and,
//! where the page cache can be dropped (root), cold; beside one backup of the
//! same session with 2-3 tabs changed.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use ffsession::format;
use ffsession::sources::SourceKind;
use ffsession::store::{check_store, ChunkerParams, SnapshotId, SnapshotSource, Store};
use ffsession_gen::{generate, Spec};
use serde_json::Value;

const START_MS: u64 = 1_795_300_000_000;
const FIREFOX_INTERVAL_MS: u64 = 15_000;
/// Firefox keeps at most this many recently closed tabs per window
/// (`browser.sessionstore.max_tabs_undo`).
const MAX_CLOSED_TABS: usize = 25;
/// Back history Firefox writes per tab (`browser.sessionstore.max_serialize_back`).
const MAX_BACK_ENTRIES: usize = 10;

struct Args {
    count: usize,
    params: ChunkerParams,
}

fn args() -> Args {
    let mut count = 1000;
    let mut params = ChunkerParams::default();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        if a == "--avg-kib" {
            let kib: usize = it.next().and_then(|v| v.parse().ok()).expect("--avg-kib N");
            params = ChunkerParams {
                min: kib * 256,
                avg: kib * 1024,
                max: kib * 4096,
            };
        } else if let Ok(n) = a.parse() {
            count = n;
        }
    }
    Args { count, params }
}

fn base64ish(rng: &mut fastrand::Rng, len: usize) -> String {
    const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    (0..len).map(|_| B64[rng.usize(..64)] as char).collect()
}

/// A random open tab: (window index, tab index).
fn pick_tab(session: &Value, rng: &mut fastrand::Rng) -> (usize, usize) {
    let windows = session["windows"].as_array().unwrap();
    loop {
        let w = rng.usize(..windows.len());
        let n = windows[w]["tabs"].as_array().unwrap().len();
        if n > 0 {
            return (w, rng.usize(..n));
        }
    }
}

/// One step of browsing: 2-3 tab changes and a new `lastUpdate`.
fn browse(session: &mut Value, rng: &mut fastrand::Rng, step: u64) {
    let now = START_MS + step * FIREFOX_INTERVAL_MS;
    session["session"]["lastUpdate"] = Value::from(now);
    for op in 0..rng.usize(2..=3) {
        let (w, t) = pick_tab(session, rng);
        let url = format!("https://site{}.example/visit/{step}/{op}", rng.u32(..5000));
        let title = format!("Page {step}.{op}");
        let window = &mut session["windows"][w];
        let tabs = window["tabs"].as_array_mut().unwrap();
        match rng.u8(..4) {
            // Navigate: a new history entry becomes current.
            0 => {
                let tab = &mut tabs[t];
                let entries = tab["entries"].as_array_mut().unwrap();
                let mut entry = entries.last().unwrap().clone();
                entry["url"] = Value::from(url.clone());
                entry["originalURI"] = Value::from(url);
                entry["title"] = Value::from(title);
                entry["ID"] = Value::from(step * 10 + op as u64);
                entries.push(entry);
                if entries.len() > MAX_BACK_ENTRIES + 1 {
                    entries.remove(0);
                }
                let len = entries.len();
                tab["index"] = Value::from(len);
                tab["lastAccessed"] = Value::from(now);
                if rng.bool() {
                    let icon =
                        format!("data:image/png;base64,iVBORw0KGgo{}", base64ish(rng, 6_600));
                    tab["image"] = Value::from(icon);
                }
            }
            // The current page's URL changes in place (pushState, a redirect).
            1 => {
                let tab = &mut tabs[t];
                let index = tab["index"].as_u64().unwrap_or(1).max(1) as usize - 1;
                let entries = tab["entries"].as_array_mut().unwrap();
                let i = index.min(entries.len() - 1);
                entries[i]["url"] = Value::from(url);
                entries[i]["title"] = Value::from(title);
                tab["lastAccessed"] = Value::from(now);
            }
            // A new tab opens next to this one.
            2 => {
                let mut tab = tabs[t].clone();
                let entries = tab["entries"].as_array_mut().unwrap();
                let mut entry = entries[0].clone();
                entry["url"] = Value::from(url);
                entry["title"] = Value::from(title);
                *entries = vec![entry];
                tab["index"] = Value::from(1);
                tab["lastAccessed"] = Value::from(now);
                tab["image"] = Value::from(format!(
                    "data:image/png;base64,iVBORw0KGgo{}",
                    base64ish(rng, 6_600)
                ));
                tabs.insert(t + 1, tab);
            }
            // A tab closes into the recently closed list.
            _ => {
                if tabs.len() < 2 {
                    continue;
                }
                let state = tabs.remove(t);
                let title = state["entries"][0]["title"].clone();
                let closed = window["_closedTabs"].as_array_mut().unwrap();
                closed.insert(
                    0,
                    serde_json::json!({
                        "state": state, "title": title, "image": null, "pos": t,
                        "closedId": step * 10 + op as u64, "closedAt": now,
                    }),
                );
                closed.truncate(MAX_CLOSED_TABS);
            }
        }
    }
}

/// (apparent bytes, allocated bytes) of every file under `dir`.
fn disk_usage(dir: &Path) -> (u64, u64, usize) {
    let (mut len, mut alloc, mut files) = (0, 0, 0);
    for entry in fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        if meta.is_dir() {
            let (l, a, f) = disk_usage(&entry.path());
            len += l;
            alloc += a;
            files += f;
        } else {
            len += meta.len();
            files += 1;
            #[cfg(unix)]
            {
                use std::os::unix::fs::MetadataExt;
                alloc += meta.blocks() * 512;
            }
            #[cfg(not(unix))]
            {
                alloc += meta.len();
            }
        }
    }
    (len, alloc, files)
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

fn main() {
    if std::env::args().any(|a| a == "--verify-only") {
        verify_cost(4, 21);
        verify_cost(40, 7);
        return;
    }
    if std::env::args().any(|a| a == "--read-back-only") {
        read_back_cost(4, 21);
        read_back_cost(40, 7);
        return;
    }
    let Args { count, params } = args();
    let count = count.max(1);
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let dir = tmp.path().join("store");
    let mut store = Store::create_or_open_with(&dir, params).unwrap();

    let mut session: Value = serde_json::from_str(&generate(&Spec::sized(4_000_000))).unwrap();
    let mut rng = fastrand::Rng::with_seed(2026);
    let check_at = [0, 1, count / 2, count.saturating_sub(2), count - 1];
    let mut kept: Vec<(SnapshotId, Vec<u8>)> = Vec::new();
    let mut full_bytes = 0u64;
    let mut json_bytes = 0u64;
    let mut times = Vec::with_capacity(count);
    let mut first_stored = 0u64;
    let mut json_first_last = (0, 0);
    for step in 0..count {
        if step > 0 {
            browse(&mut session, &mut rng, step as u64);
        }
        let json = serde_json::to_vec(&session).unwrap();
        let packed = format::compress(&json).unwrap();
        full_bytes += packed.len() as u64;
        json_bytes += json.len() as u64;
        if step == 0 {
            json_first_last.0 = json.len();
        }
        json_first_last.1 = json.len();
        let source = SnapshotSource {
            bytes: packed,
            profile: "default-release".into(),
            file_name: "sessionstore-backups/recovery.jsonlz4".into(),
            kind: SourceKind::Recovery,
            mtime_ms: Some(START_MS + step as u64 * FIREFOX_INTERVAL_MS),
        };
        let started = Instant::now();
        let info = store
            .add_snapshot(source, START_MS + step as u64 * FIREFOX_INTERVAL_MS + 500)
            .unwrap();
        times.push(started.elapsed());
        assert!(info.is_ok());
        if step == 0 {
            first_stored = info.stored_size;
        }
        if check_at.contains(&step) {
            kept.push((info.id, json));
        }
    }
    let stats = store.stats().unwrap();
    drop(store); // checkpoints and removes the write-ahead log

    let (on_disk, allocated, files) = disk_usage(&dir);
    let catalog = fs::metadata(dir.join("catalog.sqlite")).unwrap().len();
    let store = Store::open_read_only(&dir).unwrap();
    let mut read_time = Duration::ZERO;
    for (id, json) in &kept {
        let started = Instant::now();
        let back = store.read_json(*id).unwrap();
        read_time += started.elapsed();
        assert!(
            back == *json,
            "snapshot {id} did not read back byte-identical"
        );
        let exported = store.export_mozlz4(*id).unwrap();
        assert!(format::decompress(&exported).unwrap() == *json);
    }

    times.sort();
    let total: Duration = times.iter().sum();
    let pct = |p: usize| times[(times.len() - 1) * p / 100];
    let full_one = full_bytes / count as u64;
    println!(
        "store benchmark: {count} snapshots, 2-3 tab changes each, of a session of {:.1} MB JSON at first, {:.1} MB at the end ({:.1} MB JSON, {:.2} MB mozlz4 on average)",
        mb(json_first_last.0 as u64),
        mb(json_first_last.1 as u64),
        mb(json_bytes / count as u64),
        mb(full_one)
    );
    println!(
        "chunker: FastCDC v2020 min/avg/max = {}/{}/{} KiB, zstd level 3, BLAKE3",
        params.min / 1024,
        params.avg / 1024,
        params.max / 1024
    );
    println!(
        "full mozlz4 files:   {:>10.1} MB  ({count} x {:.2} MB)",
        mb(full_bytes),
        mb(full_one)
    );
    println!(
        "store on disk:       {:>10.1} MB  ({:.2}% of the full files; {files} files; chunks {:.1} MB, catalog {:.1} MB)",
        mb(on_disk),
        100.0 * on_disk as f64 / full_bytes as f64,
        mb(stats.chunk_stored_bytes),
        mb(catalog),
    );
    println!(
        "allocated (du):      {:>10.1} MB  ({:.2}%)",
        mb(allocated),
        100.0 * allocated as f64 / full_bytes as f64
    );
    println!(
        "chunks: {} ({:.1} MB raw), contents: {}; first snapshot stored {:.2} MB, each later one {:.1} KB on average",
        stats.chunks,
        mb(stats.chunk_raw_bytes),
        stats.contents,
        mb(first_stored),
        (stats.chunk_stored_bytes - first_stored) as f64 / 1e3 / (count.max(2) - 1) as f64,
    );
    println!(
        "add_snapshot: mean {:.1} ms, median {:.1} ms, p95 {:.1} ms, max {:.1} ms (total {:.1} s)",
        total.as_secs_f64() * 1e3 / count as f64,
        pct(50).as_secs_f64() * 1e3,
        pct(95).as_secs_f64() * 1e3,
        times[times.len() - 1].as_secs_f64() * 1e3,
        total.as_secs_f64()
    );
    println!(
        "read_json: {} snapshots read back byte-identical (and exported as mozlz4), {:.1} ms each",
        kept.len(),
        read_time.as_secs_f64() * 1e3 / kept.len() as f64
    );

    drop(store);

    let started = Instant::now();
    let report = check_store(&dir, &mut |_, _| {}).unwrap();
    let took = started.elapsed().as_secs_f64();
    assert!(report.is_whole(), "{report:?}");
    println!(
        "check_store: {} snapshots, {} chunks, {:.1} MB of chunk files read and {:.1} MB of content hashed in {:.2} s: {:.0} MB/s of stored data",
        report.snapshots,
        report.chunks,
        mb(report.stored_bytes),
        mb(report.content_bytes),
        took,
        mb(report.stored_bytes) / took
    );

    read_back_cost(4, 21);
    read_back_cost(40, 7);
}

/// Drop the page cache (root only): `true` when it was dropped.
fn drop_caches() -> bool {
    fs::write("/proc/sys/vm/drop_caches", "1").is_ok()
}

/// `watch::verify_newest` on a store holding a session of about `size_mb`
/// MB of JSON, warm and cold, beside a backup of it with 2-3 tabs changed.
fn verify_cost(size_mb: usize, rounds: usize) {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mut store = Store::create_or_open(tmp.path().join("store")).unwrap();
    let mut session: Value =
        serde_json::from_str(&generate(&Spec::sized(size_mb * 1_000_000))).unwrap();
    let mut rng = fastrand::Rng::with_seed(11);
    let mut backup = Vec::new();
    for step in 0..=rounds {
        if step > 0 {
            browse(&mut session, &mut rng, step as u64);
        }
        let packed = format::compress(&serde_json::to_vec(&session).unwrap()).unwrap();
        let started = Instant::now();
        store
            .add_snapshot(source_of(packed, step), START_MS + step as u64)
            .unwrap();
        if step > 0 {
            backup.push(started.elapsed());
        }
    }
    let (mut warm, mut cold) = (Vec::new(), Vec::new());
    let mut can_drop = true;
    for _ in 0..rounds {
        for (times, drop) in [(&mut warm, false), (&mut cold, true)] {
            if drop {
                can_drop = can_drop && drop_caches();
                if !can_drop {
                    continue;
                }
            }
            let started = Instant::now();
            let found = ffsession::watch::verify_newest(&store, "default-release").unwrap();
            times.push(started.elapsed());
            assert!(found.is_empty(), "{found:?}");
        }
    }
    let json = serde_json::to_vec(&session).unwrap().len();
    let cold = if cold.is_empty() {
        "cold: not measured (dropping the page cache needs root)".to_owned()
    } else {
        format!("{:.1} ms cold", median(&mut cold))
    };
    println!(
        "watch's read-back, {:.1} MB session: verify_newest median {:.1} ms warm, {cold}; a backup with 2-3 tabs changed {:.1} ms ({rounds} rounds)",
        mb(json as u64),
        median(&mut warm),
        median(&mut backup)
    );
}

fn source_of(packed: Vec<u8>, step: usize) -> SnapshotSource {
    SnapshotSource {
        bytes: packed,
        profile: "default-release".into(),
        file_name: "sessionstore-backups/recovery.jsonlz4".into(),
        kind: SourceKind::Recovery,
        mtime_ms: Some(START_MS + step as u64 * FIREFOX_INTERVAL_MS),
    }
}

fn median(times: &mut [Duration]) -> f64 {
    times.sort();
    times[times.len() / 2].as_secs_f64() * 1e3
}

/// `add_snapshot` with and without the read-back, alternating, on a session
/// of about `size_mb` MB of JSON: a new content (2-3 tabs changed) and the
/// same file again.
fn read_back_cost(size_mb: usize, rounds: usize) {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mut with = Store::create_or_open(tmp.path().join("with")).unwrap();
    let mut without = Store::create_or_open(tmp.path().join("without")).unwrap();
    without.set_read_back_for_bench(false);
    let mut session: Value =
        serde_json::from_str(&generate(&Spec::sized(size_mb * 1_000_000))).unwrap();
    let mut rng = fastrand::Rng::with_seed(7);
    // [with, without] x [changed, same]
    let mut times: [[Vec<Duration>; 2]; 2] = Default::default();
    for step in 0..=rounds {
        if step > 0 {
            browse(&mut session, &mut rng, step as u64);
        }
        let packed = format::compress(&serde_json::to_vec(&session).unwrap()).unwrap();
        let order = if step % 2 == 0 { [0, 1] } else { [1, 0] };
        for which in order {
            let store = if which == 0 { &mut with } else { &mut without };
            for (kind, at) in [(0, 0), (1, 1)] {
                let started = Instant::now();
                store
                    .add_snapshot(
                        source_of(packed.clone(), step),
                        START_MS + (2 * step + at) as u64,
                    )
                    .unwrap();
                // The first round fills an empty store; it is not timed.
                if step > 0 {
                    times[which][kind].push(started.elapsed());
                }
            }
        }
    }
    let json = serde_json::to_vec(&session).unwrap().len();
    for (kind, what) in [(0, "2-3 tabs changed"), (1, "same file again")] {
        let w = median(&mut times[0][kind]);
        let wo = median(&mut times[1][kind]);
        println!(
            "read-back, {:.1} MB session, {what}: add_snapshot median {w:.1} ms with, {wo:.1} ms without ({:+.1}%, {rounds} rounds)",
            mb(json as u64),
            100.0 * (w - wo) / wo
        );
    }
}
