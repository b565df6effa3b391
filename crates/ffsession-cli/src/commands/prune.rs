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
  ffsession prune --keep-last 5 --keep-daily 14
  ffsession --store nas prune               the remote [remotes.nas]: each machine's sessions kept on their own")]
pub struct PruneArgs {
    #[command(flatten)]
    pub keep: KeepArgs,

    /// Show what would be removed, remove nothing
    #[arg(long, short = 'n')]
    pub dry_run: bool,

    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,

    /// On a remote store (--store LOCATION): how long an object no snapshot
    /// names any more is kept before a later prune removes it, counted on the
    /// server's clock, so that a copy another machine is sending at that
    /// moment never loses what it counts on; 0 removes them now (only when no
    /// other machine copies to the remote) [default: 1d]
    #[arg(long, value_name = "DURATION", value_parser = keep_unused_arg)]
    pub keep_unused: Option<u64>,
}

/// `--keep-unused`: a duration as `tidy` reads them (`0`, `90m`, `12h`, `1d`).
fn keep_unused_arg(text: &str) -> Result<u64, String> {
    if text == "0" {
        return Ok(0);
    }
    ffsession::tidy::parse_duration(text).map_err(|e| e.to_string())
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
        let options = ffsession::remote::PruneOptions {
            keep_unused_ms: args
                .keep_unused
                .unwrap_or(ffsession::remote::KEEP_UNUSED_MS),
        };
        return super::remote_ops::prune(
            global,
            &config,
            &value,
            &policy,
            args.dry_run,
            args.json,
            options,
        );
    }
    if args.keep_unused.is_some() {
        return Err(crate::error::UserError::usage(
            "--keep-unused applies to a remote store only",
            "a local store removes what no snapshot uses at once, under its lock; give --store LOCATION to prune a remote",
        ));
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
