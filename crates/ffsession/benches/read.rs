//! Read throughput on generated 1, 4 and 40 MB sessions (about 100, 400 and
//! 4,000 tabs), against the floor measured in the same run.
//!
//! Benchmarks per size, all starting from the mozlz4 bytes in memory and
//! decompressing into the same huge-page buffer `ffsession` uses:
//! - `floor_decompress`: LZ4 decompression alone (lz4_flex);
//! - `floor_decompress_scan`: decompression plus one memchr pass over the JSON
//!   (the least any reader that looks at every byte must do);
//! - `decompress`: ffsession's own decoder (`format/stream.rs`), which
//!   reports its progress so that a mapped file's pages can go behind it;
//! - `summary_reference`: decompress + parse with the reference parser
//!   (`Session::from_json_serial`, one thread) + count;
//! - `summary_one_thread`: the same with the fast attempt, still on one
//!   thread (the two-thread parse's walk, tabs read by the quick tab reader,
//!   favicons and base64 fields skipped faster);
//! - `summary`: decompress + parse + count (what most commands read: the
//!   fast attempt, and documents of 2 MiB and more on two threads);
//! - `summary_at_once`: the same, parsed while it decodes
//!   (`SessionData::read_parsed`, `format/at_once.rs`: from 2 MiB, a helper
//!   thread decodes into the buffer while this one parses behind it, then
//!   parses the second half of what is left);
//! - `summary_in_pieces`: decompress on a helper thread a piece at a time
//!   while this one counts, keeping none of the JSON (`format/summarize.rs`:
//!   `ffsession info` on a file of 2 MiB of JSON or more; here at every size);
//! - `tab_list`: decompress + parse at once + every tab rendered as JSON
//!   (`ffsession tabs FILE`);
//! - `tab_list_after_read`: the same, parsed after decompressing (`ffsession
//!   tabs` on the profile's newest file, read among the others);
//! - `urls`: decompress + parse + the open tabs' URLs, a line each
//!   (`ffsession tabs --format urls` on a small file);
//! - `urls_in_pieces`: the same lines, read a piece at a time as
//!   `summary_in_pieces` reads (`tabs --format urls` on a large file).
//!
//! Throughput is JSON bytes per second. Criterion measures each benchmark in
//! turn and reports as usual. On a shared machine whose speed drifts over
//! seconds, a benchmark measured during a slow spell looks slow against a floor
//! measured in a fast one; so the table at the end comes from a second pass
//! that runs the benchmarks of a size in interleaved rounds (one call of each
//! per round) and takes each one's median: MB/s and the ratio to
//! `floor_decompress_scan`. That pass covers every size whatever criterion's
//! filter (about 40 s).
//!
//! Run: `cargo bench -p ffsession --bench read`

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use ffsession::buffer::Buffer;
use ffsession::error::ParseError;
use ffsession::export::{write_tabs, TabFormat};
use ffsession::format::{self, SessionData};
use ffsession::session::{Session, TabFilter};
use ffsession_gen::{generate, mozlz4, Spec};

const SIZES_MB: [usize; 3] = [1, 4, 40];

/// The benchmark that the ratios are taken against.
const FLOOR: &str = "floor_decompress_scan";

/// Time the interleaved pass spends on each size, at least.
const INTERLEAVED_TIME: Duration = Duration::from_secs(10);

/// A way to parse session JSON.
type Parser = for<'a> fn(&'a [u8]) -> Result<Session<'a>, ParseError>;

/// One call of a benchmark on the mozlz4 bytes.
type Run = Box<dyn FnMut(&[u8]) -> usize>;

/// One benchmark: its name and how to run it once.
type Workload = (&'static str, Run);

fn workloads() -> Vec<Workload> {
    let summary = |parse: Parser| -> Run {
        Box::new(move |packed| {
            let json = format::decompress_to_buffer(packed).unwrap();
            parse(&json).unwrap().summary().tabs
        })
    };
    let mut out = Vec::with_capacity(1 << 20);
    let mut out_at_once = Vec::with_capacity(1 << 20);
    let mut urls = Vec::with_capacity(1 << 20);
    let mut pieces_urls = Vec::with_capacity(1 << 20);
    vec![
        (
            "floor_decompress",
            Box::new(|packed| lz4_flex_buffer(packed).len()),
        ),
        (
            FLOOR,
            Box::new(|packed| {
                let json = lz4_flex_buffer(packed);
                memchr::memchr(0, &json).unwrap_or(0)
            }),
        ),
        (
            "decompress",
            Box::new(|packed| format::decompress_to_buffer(packed).unwrap().len()),
        ),
        (
            "summary_reference",
            summary(|j| Session::from_json_serial(j)),
        ),
        (
            "summary_one_thread",
            summary(|j| Session::from_json_one_thread(j)),
        ),
        ("summary", summary(|j| Session::from_json(j))),
        (
            "summary_at_once",
            Box::new(|packed| {
                SessionData::from_slice_parsed(packed, |_, session| session.summary().tabs).unwrap()
            }),
        ),
        (
            "summary_in_pieces",
            Box::new(|packed| format::summary_in_pieces(packed, None).unwrap().tabs),
        ),
        (
            "tab_list_after_read",
            Box::new(move |packed| {
                let json = format::decompress_to_buffer(packed).unwrap();
                let session = Session::from_json(&json).unwrap();
                out.clear();
                let filter = TabFilter {
                    window: None,
                    include_closed: true,
                };
                write_tabs(&mut out, TabFormat::Json, session.tab_records(filter)).unwrap();
                out.len()
            }),
        ),
        (
            "tab_list",
            Box::new(move |packed| {
                SessionData::from_slice_parsed(packed, |_, session| {
                    out_at_once.clear();
                    let filter = TabFilter {
                        window: None,
                        include_closed: true,
                    };
                    write_tabs(
                        &mut out_at_once,
                        TabFormat::Json,
                        session.tab_records(filter),
                    )
                    .unwrap();
                    out_at_once.len()
                })
                .unwrap()
            }),
        ),
        (
            "urls",
            Box::new(move |packed| {
                let json = format::decompress_to_buffer(packed).unwrap();
                let session = Session::from_json(&json).unwrap();
                urls.clear();
                let open = session.tab_records(TabFilter::default());
                write_tabs(&mut urls, TabFormat::Urls, open).unwrap();
                urls.len()
            }),
        ),
        (
            "urls_in_pieces",
            Box::new(move |packed| {
                pieces_urls.clear();
                format::summary_in_pieces(packed, Some(&mut pieces_urls)).unwrap();
                pieces_urls.len()
            }),
        ),
    ]
}

/// The floor's decompression: lz4_flex (unsafe code, the fastest LZ4 decoder
/// in Rust we know) into the buffer `ffsession` decodes into.
fn lz4_flex_buffer(packed: &[u8]) -> Buffer {
    let claimed = u32::from_le_bytes(packed[8..12].try_into().unwrap()) as usize;
    let mut json = Buffer::zeroed(claimed);
    let n = lz4_flex::block::decompress_into(&packed[12..], &mut json).unwrap();
    assert_eq!(n, claimed);
    json
}

/// Criterion's benchmarks of one size.
fn criterion_size(c: &mut Criterion, mb: usize, json_len: usize, packed: &[u8]) {
    let mut group = c.benchmark_group(format!("read_{mb}MB"));
    group.throughput(Throughput::Bytes(json_len as u64));
    if mb >= 40 {
        group.sample_size(20);
    }
    for (name, mut run) in workloads() {
        group.bench_function(name, |b| b.iter(|| run(black_box(packed))));
    }
    group.finish();
}

/// The median time of each workload over interleaved rounds.
fn interleaved_medians(packed: &[u8]) -> Vec<(&'static str, Duration)> {
    let mut workloads = workloads();
    let mut times = vec![Vec::new(); workloads.len()];
    let start = Instant::now();
    while start.elapsed() < INTERLEAVED_TIME || times[0].len() < 11 {
        for ((_, run), times) in workloads.iter_mut().zip(&mut times) {
            let t = Instant::now();
            black_box(run(black_box(packed)));
            times.push(t.elapsed());
        }
    }
    workloads
        .iter()
        .zip(&mut times)
        .map(|((name, _), times)| {
            times.sort();
            (*name, times[times.len() / 2])
        })
        .collect()
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let sessions: Vec<(usize, usize, String, Vec<u8>)> = SIZES_MB
        .iter()
        .map(|&mb| {
            let spec = Spec::sized(mb * 1_000_000);
            let json = generate(&spec);
            let packed = mozlz4(json.as_bytes());
            (mb, spec.tabs, json, packed)
        })
        .collect();
    for (mb, _, json, packed) in &sessions {
        criterion_size(&mut c, *mb, json.len(), packed);
    }
    c.final_summary();
    // `cargo bench` passes `--bench`; `cargo test --benches` does not, and
    // criterion then runs each benchmark once as a test.
    if !std::env::args().any(|a| a == "--bench") || std::env::args().any(|a| a == "--list") {
        return;
    }

    println!(
        "\nffsession read throughput (JSON MB/s; ratio = time / {FLOOR} time; \
         medians of interleaved rounds, at least {} s per session)",
        INTERLEAVED_TIME.as_secs()
    );
    println!(
        "{:<8} {:>6} {:>10} {:<22} {:>10} {:>10} {:>8}",
        "session", "tabs", "JSON MB", "benchmark", "ms", "MB/s", "ratio"
    );
    for (mb, tabs, json, packed) in &sessions {
        let medians = interleaved_medians(packed);
        let floor = medians.iter().find(|(name, _)| *name == FLOOR).unwrap().1;
        for (name, time) in &medians {
            let secs = time.as_secs_f64();
            println!(
                "{:<8} {:>6} {:>10.1} {:<22} {:>10.2} {:>10.0} {:>7.2}x",
                format!("{mb} MB"),
                tabs,
                json.len() as f64 / 1e6,
                name,
                secs * 1e3,
                json.len() as f64 / 1e6 / secs,
                secs / floor.as_secs_f64()
            );
        }
    }
}
