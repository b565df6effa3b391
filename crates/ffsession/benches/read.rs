//! Read throughput on generated 1, 4 and 40 MB sessions (about 100, 400 and
//! 4,000 tabs), against the floor measured in the same run.
//!
//! Benchmarks per size, all starting from the mozlz4 bytes in memory and
//! decompressing into the same huge-page buffer `ffsession` uses:
//! - `floor_decompress`: LZ4 decompression alone;
//! - `floor_decompress_scan`: decompression plus one memchr pass over the JSON
//!   (the least any reader that looks at every byte must do);
//! - `summary_reference`: decompress + parse with the reference parser
//!   (`Session::from_json_serial`, one thread) + count;
//! - `summary_one_thread`: the same with the fast attempt that skips favicons
//!   and base64 fields faster, still on one thread;
//! - `summary`: decompress + parse + count (`ffsession info`: the fast attempt,
//!   and documents of 2 MiB and more on two threads);
//! - `tab_list`: decompress + parse + every tab rendered as JSON (`ffsession tabs`).
//!
//! Throughput is JSON bytes per second. After criterion's own report, a table
//! gives MB/s and the ratio of each benchmark to `floor_decompress_scan`, from
//! criterion's mean estimates of this run.
//!
//! Run: `cargo bench -p ffsession --bench read`

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{Criterion, Throughput};
use ffsession::export::{write_tabs, TabFormat};
use ffsession::format;
use ffsession::session::{Session, TabFilter};
use ffsession_gen::{generate, mozlz4, Spec};

const SIZES_MB: [usize; 3] = [1, 4, 40];
const BENCHES: [&str; 6] = [
    "floor_decompress",
    "floor_decompress_scan",
    "summary_reference",
    "summary_one_thread",
    "summary",
    "tab_list",
];

/// A way to parse session JSON.
type Parser = for<'a> fn(&'a [u8]) -> Result<Session<'a>, ffsession::error::ParseError>;

fn output_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("criterion")
}

fn bench_size(c: &mut Criterion, mb: usize) -> (usize, usize) {
    let json = generate(&Spec::sized(mb * 1_000_000));
    let packed = mozlz4(json.as_bytes());
    let mut group = c.benchmark_group(format!("read_{mb}MB"));
    group.throughput(Throughput::Bytes(json.len() as u64));
    if mb >= 40 {
        group.sample_size(20);
    }
    let mut out = Vec::with_capacity(1 << 20);
    group.bench_function(BENCHES[0], |b| {
        b.iter(|| format::decompress_to_buffer(black_box(&packed)).unwrap())
    });
    group.bench_function(BENCHES[1], |b| {
        b.iter(|| {
            let json = format::decompress_to_buffer(black_box(&packed)).unwrap();
            memchr::memchr(0, &json)
        })
    });
    let parsers: [(&str, Parser); 3] = [
        (BENCHES[2], |j| Session::from_json_serial(j)),
        (BENCHES[3], |j| Session::from_json_one_thread(j)),
        (BENCHES[4], |j| Session::from_json(j)),
    ];
    for (name, parse) in parsers {
        group.bench_function(name, |b| {
            b.iter(|| {
                let json = format::decompress_to_buffer(black_box(&packed)).unwrap();
                parse(&json).unwrap().summary()
            })
        });
    }
    group.bench_function(BENCHES[5], |b| {
        b.iter(|| {
            let json = format::decompress_to_buffer(black_box(&packed)).unwrap();
            let session = Session::from_json(&json).unwrap();
            out.clear();
            let filter = TabFilter {
                window: None,
                include_closed: true,
            };
            write_tabs(&mut out, TabFormat::Json, session.tab_records(filter)).unwrap();
            out.len()
        })
    });
    group.finish();
    (json.len(), Spec::sized(mb * 1_000_000).tabs)
}

/// Mean time in nanoseconds from criterion's estimates of this run.
fn mean_ns(group: &str, bench: &str) -> Option<f64> {
    let path = output_dir()
        .join(group)
        .join(bench)
        .join("new/estimates.json");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    v["mean"]["point_estimate"].as_f64()
}

fn main() {
    let mut c = Criterion::default()
        .output_directory(&output_dir())
        .configure_from_args();
    let sizes: Vec<(usize, usize, usize)> = SIZES_MB
        .iter()
        .map(|&mb| {
            let (bytes, tabs) = bench_size(&mut c, mb);
            (mb, bytes, tabs)
        })
        .collect();
    c.final_summary();

    println!("\nffsession read throughput (JSON MB/s; ratio = time / floor_decompress_scan time)");
    println!(
        "{:<8} {:>6} {:>10} {:<22} {:>10} {:>8}",
        "session", "tabs", "JSON MB", "benchmark", "MB/s", "ratio"
    );
    for (mb, bytes, tabs) in sizes {
        let group = format!("read_{mb}MB");
        let Some(floor) = mean_ns(&group, BENCHES[1]) else {
            continue;
        };
        for bench in BENCHES {
            let Some(ns) = mean_ns(&group, bench) else {
                continue;
            };
            let mbps = bytes as f64 / 1e6 / (ns / 1e9);
            println!(
                "{:<8} {:>6} {:>10.1} {:<22} {:>10.0} {:>7.2}x",
                format!("{mb} MB"),
                tabs,
                bytes as f64 / 1e6,
                bench,
                mbps,
                ns / floor
            );
        }
    }
}
