//! `ffsession restore`: put a snapshot back so Firefox reopens it.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use ffsession::format::FileSummary;
use ffsession::profile::Profile;
use ffsession::restore::{self, RESUME_ONCE_PREF};
use ffsession::store::SnapshotId;

use super::naming::{self, Named, Takes};
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
///
/// Zen: the Zen sessions file of the same moment (the newest backed up
/// no later than 5 s after the session's own time) is written as
/// zen-sessions.jsonlz4 first, so Zen shows the session's tabs in their
/// spaces.
///
/// --profile PATH may name a folder that does not exist yet: it is created
/// (0700) as a new profile. A session FILE is stored first in the store of
/// the profile it is restored into (--store, or `store` in the config file,
/// when set), never in another profile's.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession list                  find the snapshot id
  ffsession restore 42 --dry-run  show what would change
  ffsession restore latest        the newest session (by its own time) that reads back whole
  ffsession restore rescued.jsonlz4   a session file (rescued, extracted, merged)
  ffsession --store /mnt/backup/default-release restore latest --profile ~/new-profile
                                  a new machine: then run `firefox -profile ~/new-profile`")]
pub struct RestoreArgs {
    /// Snapshot id (see `ffsession list`), `latest` for the newest session by
    /// its own time that reads back whole, or a session file (stored as a
    /// snapshot first, so it can be undone too). A bare id or `latest` that
    /// is also a file here is refused: write `snapshot:N`,
    /// `snapshot:latest` or `./FILE`
    #[arg(value_name = "SNAPSHOT|latest|FILE")]
    pub snapshot: String,

    /// Show what would change, change nothing
    #[arg(long, short = 'n')]
    pub dry_run: bool,

    /// Keep the undo snapshot of the profile's current files in this store
    /// folder (created if needed) instead of the store restored from: for a
    /// store on a read-only disk
    #[arg(long, value_name = "DIR")]
    pub undo_store: Option<PathBuf>,

    /// With `latest` from a remote store shared by several machines: the
    /// newest session of that machine: its host name, or the identity `list`
    /// shows in brackets (its first digits are enough) when two machines share
    /// a host name [default: this machine]
    #[arg(long, value_name = "NAME", conflicts_with = "any_machine")]
    pub from_machine: Option<String>,

    /// With `latest` from a remote store shared by several machines: the
    /// newest session of any of them
    #[arg(long)]
    pub any_machine: bool,
}

/// What to restore.
enum Source {
    Snapshot(SnapshotId),
    File(PathBuf),
}

pub fn run(global: &GlobalArgs, mut args: RestoreArgs) -> Result<()> {
    // Read before anything else: a name that is both a snapshot and a file
    // here is refused before a store or a profile is looked at.
    let named = naming::parse(
        &args.snapshot,
        Takes {
            latest: true,
            current: false,
        },
    )?;
    let config = global.config()?;
    let profile = target_profile(global)?;
    // A remote is read through a local copy that mirrors it: the undo
    // snapshot of a profile with something to undo goes to its own store.
    let remote = global.remote_store(&config).is_some();
    if args.undo_store.is_none() && remote {
        let changes = restore::profile_changes(&profile.path)?;
        if !changes.back_up.is_empty() || profile.path.join("prefs.js").exists() {
            args.undo_store = Some(global.data_store_dir(&profile)?);
        }
    }
    // The store of the profile restored into (--store or the config file's
    // `store` when set): a file restored into a new profile is kept there,
    // not in the default profile's store.
    let dir = if remote {
        global.chosen_store_dir(&config)?
    } else {
        global.store_dir(&config, &profile)?
    };
    let is_file = matches!(&named, Named::File(path) if path.is_file());
    let own_store = global.store.is_none() && config.store.is_none();
    if !is_file && own_store && !profile.path.exists() && !dir.exists() {
        return Err(UserError::with_hint(
            format!(
                "{} is a new profile folder, with no backups of its own in {}",
                profile.path.display(),
                dir.display()
            ),
            format!(
                "pass --store DIR, the store holding the snapshot ({} lists them), or restore a session FILE",
                crate::context::quoted(&["stores"])
            ),
        ));
    }
    let source = match named {
        Named::File(path) if is_file => Source::File(path),
        Named::Snapshot(id) => Source::Snapshot(id),
        Named::File(_) | Named::Current => {
            return Err(UserError::with_hint(
                format!("{:?} is neither a snapshot id nor a file", args.snapshot),
                format!(
                    "pass a number from {}, `latest`, or a session file",
                    crate::context::quoted(&["list"])
                ),
            ))
        }
        Named::Latest => {
            let store = super::open_existing_store(&dir, false)?;
            let whose = super::restore_whose::chosen(
                &store,
                &config,
                &profile,
                args.from_machine.as_deref(),
                args.any_machine,
            )?;
            let (newest, skipped) = restore::latest_of(&store, &|s| whose.keeps(s))?;
            for d in &skipped {
                crate::ui::warning(format_args!(
                    "snapshot {} does not read back whole ({}); skipped",
                    d.id, d.what
                ));
            }
            let mut damaged = restore::newer_damaged_files(&store, &newest)?;
            damaged.retain(|s| whose.keeps(s));
            for d in &damaged {
                crate::ui::warning(format_args!(
                "snapshot {} ({}, session of {}) is newer, but its file was damaged when it was taken ({}); \
                 {} gets back every complete tab it holds, then {}",
                d.id,
                d.file_name,
                fmt::local_time_or_unknown(Some(d.session_time_ms())),
                match &d.status {
                    ffsession::store::SnapshotStatus::Corrupt { reason } => reason.as_str(),
                    ffsession::store::SnapshotStatus::Ok => "",
                },
                crate::context::quoted(&[
                    "rescue",
                    &format!("snapshot:{}", d.id),
                    "-o",
                    "rescued.jsonlz4"
                ]),
                crate::context::quoted(&["restore", "./rescued.jsonlz4"])
            ));
            }
            if !skipped.is_empty() || !damaged.is_empty() {
                crate::ui::note(format_args!(
                "taking snapshot {} ({} tabs, session of {}), the newest session that reads back whole",
                newest.id,
                newest.counts.map_or(0, |c| c.tabs),
                fmt::local_time_or_unknown(Some(newest.session_time_ms()))
            ));
            }
            Source::Snapshot(newest.id)
        }
    };
    let id = match source {
        Source::Snapshot(id) => id,
        Source::File(path) if args.dry_run => return dry_run_file(&path, &profile.path, &dir),
        Source::File(path) => {
            // Refused before a store is even made for it.
            restore::check_session_file(&path)?;
            let mut store = super::create_store_waiting(global, &dir)?;
            let info = restore::import(&mut store, &path, super::now_ms())?;
            writeln!(
                io::stdout().lock(),
                "stored {} as snapshot {} in {} (the store of profile \"{}\")",
                path.display(),
                info.id,
                store.dir().display(),
                profile.name
            )?;
            info.id
        }
    };
    // Read-only first: a restore into a profile with nothing to undo (a new
    // folder) writes nothing into the store, which may be on a read-only disk.
    let mut store = super::open_existing_store(&dir, false)?;
    let plan = restore::plan(&store, id, &profile.path)?;
    let mut undo_store = match &args.undo_store {
        Some(undo_dir) if !args.dry_run => Some(super::create_store_waiting(global, undo_dir)?),
        _ => None,
    };
    if !args.dry_run && !plan.needs_undo() && undo_store.is_none() && !remote {
        // Nothing to undo: the store records what was restored when it can
        // be written (so `restore latest` means it), and is read only when
        // it cannot. Not a remote's local copy: it mirrors the remote, and
        // what one machine restored into a new folder is not the latest of
        // every machine's.
        if let Ok(writable) = super::open_existing_store_waiting(global, &dir) {
            store = writable;
        }
    }
    if !args.dry_run && plan.needs_undo() && undo_store.is_none() {
        drop(store);
        store = super::open_existing_store_waiting(global, &dir).map_err(|e| {
            match e.downcast::<ffsession::store::StoreError>() {
                Ok(e @ ffsession::store::StoreError::NotWritable { .. }) => {
                    anyhow::Error::from(restore::RestoreError::UndoNeedsStore {
                        store: dir.clone(),
                        source: Box::new(e),
                    })
                }
                Ok(e) => e.into(),
                Err(e) => e,
            }
        })?;
    }
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
    if plan.needs_undo() {
        let undo_dir = args.undo_store.as_deref().unwrap_or(store.dir());
        writeln!(
            out,
            "{} {} current session file(s) into {}",
            verb("will back up", "would back up"),
            plan.back_up.len(),
            undo_dir.display()
        )?;
    }
    for name in &plan.remove {
        writeln!(out, "{} {name}", verb("will remove", "would remove"))?;
    }
    if let Some(zen) = &plan.zen {
        writeln!(
            out,
            "{} {} (Zen's spaces and tabs of the same moment: snapshot {}, {}, collected {})",
            verb("will write", "would write"),
            zen.write.display(),
            zen.snapshot.id,
            zen.snapshot.file_name,
            fmt::local_time_or_unknown(zen.snapshot.last_update_ms)
        )?;
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
        crate::ui::warning(w);
    }
    if args.dry_run {
        return Ok(());
    }
    let report = restore::execute(
        &plan,
        &mut store,
        undo_store.as_mut(),
        &profile.name,
        super::now_ms(),
    )?;
    if let Some(undo) = report
        .undo
        .iter()
        .filter(|s| s.is_ok() && !s.kind.is_zen())
        .max_by_key(|s| s.last_update_ms)
    {
        // The command names this run's browser, profile and store (a
        // restore from a remote undoes from the profile's own store, which
        // holds the undo snapshot: `--store` is then that folder).
        let id = format!("snapshot:{}", undo.id);
        let undo_cmd = match &args.undo_store {
            Some(undo_dir) => undo_global(global, undo_dir).command(&["restore", &id]),
            None => global.command(&["restore", &id]),
        };
        writeln!(out, "to undo: {undo_cmd} (the session that was current)")?;
    }
    writeln!(
        out,
        "done: Firefox reopens snapshot {} at its next start",
        plan.snapshot.id
    )?;
    if plan.create_dir || !profile.is_default {
        writeln!(
            out,
            "start it with: {}   (or add the folder in about:profiles)",
            crate::context::join(&[
                "firefox".to_owned(),
                "-profile".to_owned(),
                profile.path.to_string_lossy().into_owned()
            ])
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
    // Counted as it decodes, keeping none of the JSON (`format/summarize.rs`).
    let summary = FileSummary::read(path)?.summary;
    if summary.windows == 0 || summary.tabs == 0 {
        return Err(UserError::with_hint(
            format!(
                "{}: cannot be restored: it has no window with tabs, and Firefox would start empty instead",
                path.display()
            ),
            format!(
                "{} shows what it holds",
                crate::context::quoted(&["info", &crate::context::absolute(path)])
            ),
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
        "would store it as a snapshot in {} (the store of the profile restored into)",
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
    // Zen's file of the file's moment, if the store has one (checked whole
    // when the file is restored).
    let store = super::open_existing_store(store_dir, false).ok();
    let snapshots = store.and_then(|s| s.snapshots().ok()).unwrap_or_default();
    let time = summary.timestamps.last_update.unwrap_or(0);
    let zen = ffsession::zen::companion::candidates(
        time,
        ffsession::zen::companion::IMPORTED,
        &snapshots,
    );
    if let Some(z) = zen.first() {
        writeln!(
            out,
            "would write {} (Zen's spaces and tabs of the same moment: snapshot {}, {}, collected {})",
            profile_dir.join("zen-sessions.jsonlz4").display(),
            z.id,
            z.file_name,
            fmt::local_time_or_unknown(z.last_update_ms)
        )?;
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
        crate::ui::warning(w);
    }
    out.flush()?;
    Ok(())
}

/// The global options of this run with `--store` set to `store`: the store
/// that holds a restore's undo snapshot.
fn undo_global(global: &GlobalArgs, store: &Path) -> GlobalArgs {
    GlobalArgs {
        store: Some(store.to_path_buf()),
        ..global.clone()
    }
}
