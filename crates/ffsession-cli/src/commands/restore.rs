//! `ffsession restore`: put a snapshot back so Firefox reopens it.

use std::io::{self, Write};

use anyhow::Result;
use clap::Args;
use ffsession::restore::{self, RESUME_ONCE_PREF};
use ffsession::store::SnapshotId;

use crate::cli::GlobalArgs;
use crate::error::UserError;
use crate::fmt;

/// Restore a snapshot so that the next Firefox start reopens exactly its
/// windows and tabs, whatever the startup setting.
///
/// Refuses while Firefox runs on the profile, and holds Firefox's profile lock
/// while it works. Before changing anything it snapshots the profile's current
/// session files into the store, so the restore can be undone with another
/// restore. Then it removes recovery.jsonlz4, recovery.baklz4 and
/// previous.jsonlz4 (now in the store), writes the snapshot as
/// sessionstore.jsonlz4, and sets the one-shot pref
/// browser.sessionstore.resume_session_once in prefs.js, which Firefox clears
/// after restoring.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession list                  find the snapshot id
  ffsession restore 42 --dry-run  show what would change
  ffsession restore latest        the newest snapshot that verified ok")]
pub struct RestoreArgs {
    /// Snapshot id (see `ffsession list`), or `latest` for the newest good one
    pub snapshot: String,

    /// Show what would change, change nothing
    #[arg(long, short = 'n')]
    pub dry_run: bool,
}

pub fn run(global: &GlobalArgs, args: RestoreArgs) -> Result<()> {
    let config = global.config()?;
    let profile = global.profile()?;
    let dir = global.store_dir(&config, &profile)?;
    let id = if args.snapshot == "latest" {
        let store = super::open_existing_store(&dir, false)?;
        let newest = store
            .snapshots()?
            .into_iter()
            .find(|s| s.is_ok() && s.counts.is_some_and(|c| c.tabs > 0));
        newest.map(|s| s.id).ok_or_else(|| {
            UserError::with_hint(
                "the store has no good snapshot to restore",
                "take one with `ffsession backup`",
            )
        })?
    } else {
        SnapshotId(args.snapshot.parse().map_err(|_| {
            UserError::with_hint(
                format!("{:?} is not a snapshot id", args.snapshot),
                "pass a number from `ffsession list`, or `latest`",
            )
        })?)
    };
    let mut store = if args.dry_run {
        super::open_existing_store(&dir, false)?
    } else {
        super::open_existing_store_waiting(global, &dir)?
    };
    let plan = restore::plan(&store, id, &profile.path)?;
    let mut out = io::stdout().lock();
    let verb = |now: &str, later: &str| {
        if args.dry_run {
            later.to_owned()
        } else {
            now.to_owned()
        }
    };
    // The plan is printed before anything changes; "done" follows only on success.
    writeln!(
        out,
        "restore {} into {}",
        fmt::snapshot_line(&plan.snapshot),
        profile.path.display()
    )?;
    writeln!(
        out,
        "{} {} current session file(s) into {}",
        verb("will back up", "would back up"),
        plan.back_up.len(),
        store.dir().display()
    )?;
    for name in &plan.remove {
        writeln!(out, "{} {name}", verb("will remove", "would remove"))?;
    }
    writeln!(
        out,
        "{} {}",
        verb("will write", "would write"),
        plan.write.display()
    )?;
    writeln!(
        out,
        "{} {RESUME_ONCE_PREF} in {}",
        verb("will set", "would set"),
        plan.prefs.display()
    )?;
    for w in &plan.warnings {
        writeln!(io::stderr().lock(), "ffsession: warning: {w}")?;
    }
    if args.dry_run {
        return Ok(());
    }
    let report = restore::execute(&plan, &mut store, &profile.name, super::now_ms())?;
    if let Some(undo) = report
        .undo
        .iter()
        .filter(|s| s.is_ok())
        .max_by_key(|s| s.last_update_ms)
    {
        writeln!(
            out,
            "to undo: ffsession restore {} (the session that was current)",
            undo.id
        )?;
    }
    writeln!(
        out,
        "done: Firefox reopens snapshot {} at its next start",
        plan.snapshot.id
    )?;
    out.flush()?;
    Ok(())
}
