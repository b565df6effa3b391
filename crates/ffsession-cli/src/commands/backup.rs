//! `ffsession backup`: snapshot every session file of a profile into the store.

use std::io::{self, Write};

use anyhow::Result;
use clap::Args;
use ffsession::backup::backup_profile;
use ffsession::store::Store;

use super::prune::{apply_policy, KeepArgs};
use crate::cli::GlobalArgs;
use crate::error::AlarmRaised;
use crate::fmt;

/// Snapshot every session file of the profile (sessionstore.jsonlz4 and
/// everything in sessionstore-backups/) into the backup store.
///
/// Each file is verified (decompressed and parsed) before it counts as good;
/// content already in the store is not stored twice. If the newest file is
/// damaged, or has lost more than half of the tabs of the last good snapshot,
/// backup says so on stderr and exits with code 3; the snapshot is kept anyway,
/// marked, so nothing is lost.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession backup
  ffsession backup --profile work --store /mnt/backup/ffsession-work
  ffsession backup --prune --keep-daily 30")]
pub struct BackupArgs {
    /// Apply the retention policy after backing up (see `ffsession prune`)
    #[arg(long)]
    pub prune: bool,

    #[command(flatten)]
    pub keep: KeepArgs,

    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

pub fn run(global: &GlobalArgs, args: BackupArgs) -> Result<()> {
    let config = global.config()?;
    let profile = global.profile()?;
    let store_dir = global.store_dir(&config, &profile)?;
    let mut store = Store::create_or_open(&store_dir)?;
    let now = super::now_ms();
    let report = backup_profile(&mut store, &profile.name, &profile.path, now)?;
    if args.json {
        super::print_json(&report)?;
    } else {
        let mut out = io::stdout().lock();
        if report.snapshots.is_empty() {
            writeln!(out, "no session files in {}", profile.path.display())?;
        }
        for s in &report.snapshots {
            writeln!(out, "{}", fmt::snapshot_line(s))?;
        }
        writeln!(
            out,
            "{} stored in {} ({} new)",
            fmt::count(report.snapshots.len(), "snapshot", "snapshots"),
            store_dir.display(),
            fmt::size(report.snapshots.iter().map(|s| s.stored_size).sum())
        )?;
        out.flush()?;
    }
    if args.prune {
        let policy = args.keep.policy(&config.prune);
        apply_policy(&mut store, &policy, false, args.json)?;
    }
    match report.alarm {
        Some(alarm) => {
            let mut message = alarm.to_string();
            if let ffsession::backup::Alarm::NewestCorrupt { file, .. } = &alarm {
                message.push_str(&format!(
                    " (hint: `ffsession rescue {} -o rescued.jsonlz4` recovers its complete tabs)",
                    profile.path.join(file).display()
                ));
            }
            Err(AlarmRaised(message).into())
        }
        None => Ok(()),
    }
}
