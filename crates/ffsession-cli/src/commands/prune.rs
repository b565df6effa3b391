//! `ffsession prune`: apply the retention policy to the backup store.

use std::io::{self, Write};

use anyhow::Result;
use clap::Args;
use ffsession::prune;
use ffsession::retention::RetentionPolicy;
use ffsession::store::Store;

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
    if let Some(value) = global.remote_store(&config) {
        let policy = args.keep.policy(&config.prune);
        return super::remote_ops::prune(global, &config, &value, &policy, args.dry_run, args.json);
    }
    let dir = global.chosen_store_dir(&config)?;
    let policy = args.keep.policy(&config.prune);
    let mut store = if args.dry_run {
        super::open_existing_store(&dir, false)?
    } else {
        super::open_existing_store_waiting(global, &dir)?
    };
    apply_policy(&mut store, &policy, args.dry_run, args.json)
}

/// Every snapshot of `plan` with what happens to it and why, then what was
/// found damaged: the plan as a local prune and a remote prune print it.
pub fn print_plan(
    out: &mut impl Write,
    snapshots: &[ffsession::store::SnapshotInfo],
    plan: &ffsession::retention::PrunePlan,
) -> io::Result<()> {
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
    for (id, what) in &plan.found_damaged {
        writeln!(
            out,
            "found damaged: #{id} does not read back whole ({what}); kept (a backup of the same session heals it), and never counted as the newest good one"
        )?;
    }
    Ok(())
}

/// Plan with `policy`, print the plan, and (unless `dry_run`) carry it out.
pub fn apply_policy(
    store: &mut Store,
    policy: &RetentionPolicy,
    dry_run: bool,
    json: bool,
) -> Result<()> {
    let (snapshots, plan) =
        prune::plan_store(store, policy, &crate::fmt::local_zone(), super::now_ms())?;
    if json {
        super::print_json(&plan)?;
    } else {
        let mut out = io::stdout().lock();
        print_plan(&mut out, &snapshots, &plan)?;
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
    let outcome = prune::carry_out(store, &plan)?;
    // Also when nothing was removed: it clears what an interrupted write left.
    let gc = if outcome.removed == 0 {
        store.collect_garbage()?
    } else {
        outcome.gc
    };
    if !json {
        crate::ui::note(format_args!(
            "removed {} of stored data no snapshot uses",
            fmt::size(gc.bytes_removed)
        ));
    }
    Ok(())
}
