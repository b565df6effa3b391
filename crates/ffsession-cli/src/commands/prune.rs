//! `ffsession prune`: apply the retention policy to the backup store.

use std::io::{self, Write};

use anyhow::Result;
use clap::Args;
use ffsession::retention::{self, Candidate, RetentionPolicy};
use ffsession::store::{SnapshotId, Store};
use jiff::tz::TimeZone;

use crate::cli::GlobalArgs;
use crate::fmt;

/// Remove the snapshots the retention policy does not keep, then the stored
/// data no snapshot uses any more.
///
/// Prints every snapshot with what happens to it and why. Whatever the policy,
/// it never removes the newest snapshot that verified ok, nor the last good
/// snapshot before a damaged one or one that lost more than half of its tabs.
/// Unset --keep-* options come from the config file's [prune] section, else the
/// defaults shown. Periods are counted in the local time zone.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession prune --dry-run                 show what the policy would remove
  ffsession prune --keep-last 5 --keep-daily 14")]
pub struct PruneArgs {
    #[command(flatten)]
    pub keep: KeepArgs,

    /// Show what would be removed, remove nothing
    #[arg(long, short = 'n')]
    pub dry_run: bool,

    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

/// The retention options; unset ones come from the config file.
#[derive(Debug, Args)]
pub struct KeepArgs {
    /// Keep the N newest snapshots [default: 10]
    #[arg(long, value_name = "N")]
    pub keep_last: Option<u32>,
    /// Keep the newest snapshot of each of the N newest hours [default: 24]
    #[arg(long, value_name = "N")]
    pub keep_hourly: Option<u32>,
    /// Keep the newest snapshot of each of the N newest days [default: 7]
    #[arg(long, value_name = "N")]
    pub keep_daily: Option<u32>,
    /// Keep the newest snapshot of each of the N newest weeks [default: 4]
    #[arg(long, value_name = "N")]
    pub keep_weekly: Option<u32>,
    /// Keep the newest snapshot of each of the N newest months [default: 12]
    #[arg(long, value_name = "N")]
    pub keep_monthly: Option<u32>,
    /// Keep the newest snapshot of each of the N newest years [default: 3]
    #[arg(long, value_name = "N")]
    pub keep_yearly: Option<u32>,
}

impl KeepArgs {
    /// The flags over `base` (the config file's policy).
    pub fn policy(&self, base: &RetentionPolicy) -> RetentionPolicy {
        RetentionPolicy {
            keep_last: self.keep_last.unwrap_or(base.keep_last),
            keep_hourly: self.keep_hourly.unwrap_or(base.keep_hourly),
            keep_daily: self.keep_daily.unwrap_or(base.keep_daily),
            keep_weekly: self.keep_weekly.unwrap_or(base.keep_weekly),
            keep_monthly: self.keep_monthly.unwrap_or(base.keep_monthly),
            keep_yearly: self.keep_yearly.unwrap_or(base.keep_yearly),
        }
    }
}

pub fn run(global: &GlobalArgs, args: PruneArgs) -> Result<()> {
    let config = global.config()?;
    let profile = global.profile()?;
    let dir = global.store_dir(&config, &profile)?;
    let policy = args.keep.policy(&config.prune);
    let mut store = super::open_existing_store(&dir, !args.dry_run)?;
    apply_policy(&mut store, &policy, args.dry_run, args.json)
}

/// Plan with `policy`, print the plan, and (unless `dry_run`) carry it out.
pub fn apply_policy(
    store: &mut Store,
    policy: &RetentionPolicy,
    dry_run: bool,
    json: bool,
) -> Result<()> {
    let snapshots = store.snapshots()?;
    let archive = store.archive_snapshots()?;
    let candidates: Vec<Candidate> = snapshots
        .iter()
        .map(|s| Candidate {
            id: s.id.0,
            taken_at_ms: i64::try_from(s.taken_at_ms).unwrap_or(i64::MAX),
            verified: s.is_ok(),
            tabs: s.counts.map_or(0, |c| c.tabs),
            holds_archive: archive.contains(&s.id),
        })
        .collect();
    let plan = retention::plan(policy, &candidates, &TimeZone::system());
    if json {
        super::print_json(&plan)?;
    } else {
        let mut out = io::stdout().lock();
        for d in &plan.decisions {
            let Some(s) = snapshots.iter().find(|s| s.id.0 == d.id) else {
                continue;
            };
            let why: Vec<String> = d.reasons.iter().map(ToString::to_string).collect();
            let verdict = if d.keep {
                format!("keep ({})", why.join(", "))
            } else {
                "remove".to_owned()
            };
            writeln!(out, "{verdict:<32} {}", fmt::snapshot_line(s))?;
        }
        let removed = plan.removed().count();
        let verb = if dry_run { "would remove" } else { "removing" };
        writeln!(
            out,
            "{verb} {} of {}",
            fmt::count(removed, "snapshot", "snapshots"),
            snapshots.len()
        )?;
        out.flush()?;
    }
    if dry_run {
        return Ok(());
    }
    for id in plan.removed().collect::<Vec<_>>() {
        store.remove_snapshot(SnapshotId(id))?;
    }
    let gc = store.collect_garbage()?;
    if !json {
        writeln!(
            io::stderr().lock(),
            "ffsession: removed {} of stored data no snapshot uses",
            fmt::size(gc.bytes_removed)
        )?;
    }
    Ok(())
}
