//! `ffsession restore`: put a snapshot back so Firefox reopens it.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use ffsession::profile::Profile;
use ffsession::restore::{self, RESUME_ONCE_PREF};
use ffsession::store::SnapshotId;
use ffsession::SessionData;

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
  ffsession restore latest        the newest snapshot that verified ok
  ffsession restore rescued.jsonlz4   a session file (rescued, extracted, merged)
  ffsession --store /mnt/backup/default-release restore latest --profile ~/new-profile
                                  a new machine: then run `firefox -profile ~/new-profile`")]
pub struct RestoreArgs {
    /// Snapshot id (see `ffsession list`), `latest` for the newest good one,
    /// or a session file (stored as a snapshot first, so it can be undone too)
    #[arg(value_name = "SNAPSHOT|latest|FILE")]
    pub snapshot: String,

    /// Show what would change, change nothing
    #[arg(long, short = 'n')]
    pub dry_run: bool,
}

/// What to restore.
enum Source {
    Snapshot(SnapshotId),
    File(PathBuf),
}

pub fn run(global: &GlobalArgs, args: RestoreArgs) -> Result<()> {
    let config = global.config()?;
    let profile = target_profile(global)?;
    let dir = global.chosen_store_dir(&config)?;
    let source = if Path::new(&args.snapshot).is_file() {
        Source::File(PathBuf::from(&args.snapshot))
    } else if args.snapshot == "latest" {
        let store = super::open_existing_store(&dir, false)?;
        let newest = store
            .snapshots()?
            .into_iter()
            .find(|s| s.is_ok() && s.counts.is_some_and(|c| c.tabs > 0));
        Source::Snapshot(newest.map(|s| s.id).ok_or_else(|| {
            UserError::with_hint(
                "the store has no good snapshot to restore",
                "take one with `ffsession backup`",
            )
        })?)
    } else {
        Source::Snapshot(SnapshotId(args.snapshot.parse().map_err(|_| {
            UserError::with_hint(
                format!("{:?} is neither a snapshot id nor a file", args.snapshot),
                "pass a number from `ffsession list`, `latest`, or a session file",
            )
        })?))
    };
    let id = match source {
        Source::Snapshot(id) => id,
        Source::File(path) if args.dry_run => return dry_run_file(&path, &profile.path, &dir),
        Source::File(path) => {
            let mut store = super::create_store_waiting(global, &dir)?;
            let info = restore::import(&mut store, &path, super::now_ms())?;
            writeln!(
                io::stdout().lock(),
                "stored {} as snapshot {}",
                path.display(),
                info.id
            )?;
            info.id
        }
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
    if plan.create_dir {
        writeln!(
            out,
            "{} the profile folder {}",
            verb("will create", "would create"),
            profile.path.display()
        )?;
    }
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
    if plan.create_dir || !profile.is_default {
        writeln!(
            out,
            "start it with: firefox -profile {}   (or add the folder in about:profiles)",
            profile.path.display()
        )?;
    }
    out.flush()?;
    Ok(())
}

/// The profile to restore into: `--profile` (a folder that does not exist yet
/// is created by the restore), or the default profile.
fn target_profile(global: &GlobalArgs) -> Result<Profile> {
    if let Some(spec) = global.profile.as_deref() {
        let path = Path::new(spec);
        let is_path = spec.contains('/') || spec.contains(std::path::MAIN_SEPARATOR);
        if is_path && !path.exists() {
            return Ok(Profile {
                name: path
                    .file_name()
                    .map_or_else(|| spec.to_owned(), |n| n.to_string_lossy().into_owned()),
                path: path.to_path_buf(),
                is_default: false,
            });
        }
    }
    global.profile()
}

/// `restore FILE --dry-run`: check the file and say what would change,
/// without storing it.
fn dry_run_file(path: &Path, profile_dir: &Path, store_dir: &Path) -> Result<()> {
    let data = SessionData::read(path)?;
    let summary = data.parse()?.summary();
    if summary.windows == 0 || summary.tabs == 0 {
        return Err(UserError::with_hint(
            format!(
                "{}: cannot be restored: it has no window with tabs, and Firefox would start empty instead",
                path.display()
            ),
            "`ffsession info FILE` shows what it holds",
        ));
    }
    let changes = restore::profile_changes(profile_dir)?;
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "restore {} ({} windows, {} tabs) into {}",
        path.display(),
        summary.windows,
        summary.tabs,
        profile_dir.display()
    )?;
    writeln!(
        out,
        "would store it as a snapshot in {}",
        store_dir.display()
    )?;
    if changes.create_dir {
        writeln!(
            out,
            "would create the profile folder {}",
            profile_dir.display()
        )?;
    }
    writeln!(
        out,
        "would back up {} current session file(s) into {}",
        changes.back_up.len(),
        store_dir.display()
    )?;
    for name in &changes.remove {
        writeln!(out, "would remove {name}")?;
    }
    writeln!(
        out,
        "would write {}",
        profile_dir.join("sessionstore.jsonlz4").display()
    )?;
    writeln!(
        out,
        "would set {RESUME_ONCE_PREF} in {}",
        profile_dir.join("prefs.js").display()
    )?;
    for w in &changes.warnings {
        writeln!(io::stderr().lock(), "ffsession: warning: {w}")?;
    }
    out.flush()?;
    Ok(())
}
