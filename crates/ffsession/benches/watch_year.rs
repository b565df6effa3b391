//! A year of `ffsession watch` on a fake clock: store size, snapshots and
//! catalog rows after 1, 3, 6 and 12 months; and the RSS of a long run.
//!
//! ```text
//! cargo bench -p ffsession --bench watch_year                    # a year, 4 MB session
//! cargo bench -p ffsession --bench watch_year -- --change-every 6
//! cargo bench -p ffsession --bench watch_year -- --rss           # 10,000 cycles, RSS
//! ```
//!
//! The service's interval is 5 minutes: 105,120 cycles a year. The session
//! changes (a few tabs navigate) every `--change-every` cycles (default 12:
//! hourly); the cycles in between find every file unchanged and store nothing
//! (the one-month test runs all of them and checks it), so only one of them a
//! day is run here.

#[path = "support/watch_sim.rs"]
mod watch_sim;

use std::time::Duration;

use ffsession::retention::RetentionPolicy;
use watch_sim::{policy_bound, run, Checkpoint, SimConfig};

fn arg_value(args: &[String], name: &str) -> Option<u64> {
    let i = args.iter().position(|a| a == name)?;
    args.get(i + 1)?.parse().ok()
}

fn print(c: &Checkpoint) {
    let rows: Vec<String> = c.rows.iter().map(|(t, n)| format!("{t} {n}")).collect();
    println!(
        "day {:>3}: {:>6} cycles run, {:>5} changes, {:>5} snapshots taken, {:>3} kept, store {:>6.1} MB; rows: {}  ({:.0} s)",
        c.day,
        c.cycles_run,
        c.changes,
        c.snapshots_taken,
        c.snapshots_kept,
        c.store_bytes as f64 / 1e6,
        rows.join(", "),
        c.elapsed.as_secs_f64()
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = tempfile::tempdir().unwrap();
    let policy = RetentionPolicy::DEFAULT;
    if args.iter().any(|a| a == "--rss") {
        // 10,000 cycles, the session changing at every one (the most work a
        // cycle does: store, prune, collect garbage). 200 KB rather than 4 MB
        // keeps the run to minutes; what is measured is growth over cycles.
        let cycles = arg_value(&args, "--cycles").unwrap_or(10_000);
        let interval = Duration::from_secs(300);
        let per_day = 86_400 / interval.as_secs();
        let cfg = SimConfig {
            days: cycles.div_ceil(per_day),
            interval,
            change_every: 1,
            run_unchanged: true,
            session_bytes: 200_000,
            tabs_per_change: 3,
            checkpoints: vec![cycles.div_ceil(per_day)],
            policy,
            rss_every: Some(1_000),
        };
        let end = run(&cfg, dir.path(), |_| {});
        print(&end);
        for (n, kib) in &end.rss {
            println!("after {n:>6} cycles: VmRSS {kib} KiB");
        }
        return;
    }
    let days = arg_value(&args, "--days").unwrap_or(365);
    let cfg = SimConfig {
        days,
        interval: Duration::from_secs(300),
        change_every: arg_value(&args, "--change-every").unwrap_or(12),
        run_unchanged: false,
        session_bytes: arg_value(&args, "--session-bytes").unwrap_or(4_000_000) as usize,
        tabs_per_change: 3,
        checkpoints: vec![30, 91, 182, 365, days],
        policy,
        rss_every: None,
    };
    println!(
        "simulating {} days of watch every 5 min, {} KB session, {} tabs navigate every {} cycles; policy bound {} snapshots",
        cfg.days,
        cfg.session_bytes / 1000,
        cfg.tabs_per_change,
        cfg.change_every,
        policy_bound(&policy)
    );
    run(&cfg, dir.path(), print);
}
