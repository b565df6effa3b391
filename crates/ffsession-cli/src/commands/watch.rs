//! `ffsession watch`: back up whenever Firefox writes its session.

use std::collections::HashSet;
use std::io::{self, Write};
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use ffsession::backup::Alarm;
use ffsession::profile::lock_state;
use ffsession::profile::Profile;
use ffsession::retention::RetentionPolicy;
use ffsession::watch::loss::{good_copy, newest_good_tabs, Loss, LossWatch, Reader};
use ffsession::watch::{
    cycle, verify_newest, Debouncer, UnchangedNotices, DEFAULT_INTERVAL, VERIFY_INTERVAL,
};
use jiff::tz::TimeZone;
use notify::{RecursiveMode, Watcher};

use super::backup::skip_warning;
use super::prune::KeepArgs;
use crate::alarms::Alarms;
use crate::cli::GlobalArgs;
use crate::config::Config;
use crate::error::UserError;
use crate::fmt;

/// Stay running and back up the profile's session files whenever Firefox
/// changes them.
///
/// Firefox rewrites recovery.jsonlz4 about every 15 seconds; watch takes at
/// most one snapshot per --interval while changes keep coming, one at start,
/// and one at once when Firefox exits (cleanly or not). Ctrl-C stops it.
/// `ffsession service install` runs it in the background at login.
///
/// A file whose content is that of its newest snapshot is not stored again
/// (said once: "unchanged since #N, not stored"). After each snapshot, the
/// retention policy is applied as `ffsession prune` does (--keep-* options,
/// else the config file's [prune] section, else the defaults), with the same
/// protections. The store is locked only while a snapshot is taken, so
/// `ffsession backup` can run meanwhile.
///
/// Between snapshots it reads every write of Firefox: a write that is
/// damaged or lost more than half of the tabs makes a snapshot at once,
/// whatever the interval, which stores the good copy Firefox still has
/// (recovery.baklz4, previous.jsonlz4). Such an alarm, backups failing for a
/// day, and copies to a `watch = true` remote failing for a day are said in
/// the log and as a desktop notification (freedesktop, a Windows toast, a
/// macOS notification) that names the snapshot and the command that brings
/// the tabs back, at most one per kind an hour; `notify = false` in the
/// config file's [watch] section keeps them off the desktop. `ffsession
/// status` shows them.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession watch                        the default profile, one snapshot per 5 minutes at most
  ffsession watch --interval 1m --keep-last 50
  ffsession service install              run it at every login instead
  ffsession status                       is it working? its alarms, the last snapshot")]
pub struct WatchArgs {
    /// Minimum time between two snapshots, like 5m, 90s or 1h
    /// [default: `interval` in the config file's [watch] section, else 5m]
    #[arg(long, value_name = "DURATION", value_parser = interval_arg)]
    pub interval: Option<Duration>,

    #[command(flatten)]
    pub keep: KeepArgs,
}

/// How long watch waits before trying again when the store stayed locked.
const LOCKED_RETRY: Duration = Duration::from_secs(30);

/// How long watch waits before trying again after a cycle failed (the store
/// cannot be written, the disk is full).
const FAILED_RETRY: Duration = Duration::from_secs(60);

/// How long after a change the newest session is read: Firefox's write is a
/// few renames, read once they are done.
const SETTLE: Duration = Duration::from_millis(300);

enum Message {
    Changed(bool),
    Stop,
}

/// Parse `5m`, `90s`, `1h30m`, ...
pub fn parse_interval(text: &str) -> Result<Duration> {
    let d: jiff::SignedDuration = text.parse().map_err(|e| {
        UserError::with_hint(
            format!("invalid interval {text:?}: {e}"),
            "write it like 5m, 90s or 1h",
        )
    })?;
    Duration::try_from(d)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            UserError::with_hint(format!("invalid interval {text:?}"), "it must be positive")
        })
}

/// `--interval` (clap's value parser: a bad value is a usage error naming
/// the option).
fn interval_arg(text: &str) -> Result<Duration, String> {
    parse_interval(text).map_err(|_| "write it like 5m, 90s or 1h (more than zero)".to_owned())
}

/// Whether a path is a session file Firefox writes (not a temporary file).
fn is_session_file(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    if name.ends_with(".tmp") {
        return false;
    }
    let in_backups = path
        .parent()
        .and_then(|p| p.file_name())
        .is_some_and(|p| p == "sessionstore-backups");
    name == "sessionstore.jsonlz4" || name == "sessionstore.js" || in_backups
}

pub fn run(global: &GlobalArgs, args: WatchArgs) -> Result<()> {
    let config = global.config()?;
    let interval = match (args.interval, config.watch.interval.as_deref()) {
        (Some(interval), _) => interval,
        (None, Some(text)) => parse_interval(text)?,
        (None, None) => DEFAULT_INTERVAL,
    };
    let profile = global.profile()?;
    let store_dir = global.store_dir(&config, &profile)?;
    let policy = args.keep.policy(&config.prune);
    let tz = TimeZone::system();
    // Create (or check) the store now, so a bad --store fails at start; it is
    // locked again only while each snapshot is taken. A store that cannot be
    // opened ends watch (the service starts it again 30 s later), remembered
    // first: a day of it is an alarm.
    let notify = config.watch.notify.unwrap_or(true);
    let mut alarms = Alarms::new(global, &store_dir, notify, super::now_ms());
    let first_reference = super::create_store_waiting(global, &store_dir)
        .and_then(|store| Ok(newest_good_tabs(&store, &profile.name)?))
        .inspect_err(|e| {
            if e.downcast_ref::<UserError>().is_none() {
                alarms.backup_failed(&format!("{e:#}"), super::now_ms());
            }
        })?;

    let (tx, rx) = mpsc::channel::<Message>();
    let stop = tx.clone();
    ctrlc::set_handler(move || {
        let _ = stop.send(Message::Stop);
    })
    .context("installing the Ctrl-C handler")?;
    let fs_tx = tx.clone();
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        use notify::event::{EventKind, ModifyKind};
        let Ok(event) = res else { return };
        // Writes, renames and removals only: reading the files (our own backups
        // included) must not count as a change.
        let writes = match event.kind {
            EventKind::Create(_) | EventKind::Remove(_) => true,
            EventKind::Modify(ModifyKind::Metadata(_)) => false,
            EventKind::Modify(_) => true,
            _ => false,
        };
        let relevant = event.paths.iter().any(|p| {
            is_session_file(p) || p.file_name().is_some_and(|n| n == "sessionstore-backups")
        });
        if writes && relevant {
            // Firefox writes sessionstore.jsonlz4 when it shuts down cleanly.
            let clean_exit = event
                .paths
                .iter()
                .any(|p| p.file_name().is_some_and(|n| n == "sessionstore.jsonlz4"));
            let _ = fs_tx.send(Message::Changed(clean_exit));
        }
    })
    .context("starting the file watcher")?;
    let backups = profile.path.join("sessionstore-backups");
    watcher
        .watch(&profile.path, RecursiveMode::NonRecursive)
        .with_context(|| format!("{}: cannot watch the profile", profile.path.display()))?;
    let mut watching_backups = watcher.watch(&backups, RecursiveMode::NonRecursive).is_ok();

    let mut out = io::stdout().lock();
    writeln!(
        out,
        "watching {} (one snapshot per {} at most, into {}); Ctrl-C stops",
        fmt::path(&profile.path),
        fmt::duration(interval),
        fmt::path(&store_dir)
    )?;
    out.flush()?;
    let start = Instant::now();
    let mut debouncer = Debouncer::new(interval);
    debouncer.changed();
    let mut w = Watch {
        notices: UnchangedNotices::default(),
        skip_warnings: HashSet::new(),
        last_verify: None,
        copies: crate::remote::WatchCopies::new(&config),
        reader: Reader::default(),
        losses: LossWatch::new(first_reference),
        loss: None,
    };
    // Read what Firefox has now: the reference the next writes are
    // compared with (a loss already there is the first cycle's alarm).
    let mut read_at: Option<Duration> = Some(Duration::ZERO);
    let mut retry_at: Option<Duration> = None;
    let mut running = lock_state(&profile.path).is_running();
    loop {
        if w.last_verify
            .is_some_and(|at| at.elapsed() >= VERIFY_INTERVAL)
        {
            debouncer.changed();
        }
        // Every change is read (a summary, no store): a loss makes the
        // cycle due now, while Firefox still has the good copy.
        if read_at.is_some_and(|at| start.elapsed() >= at) {
            read_at = None;
            if let Ok(Some(reading)) = w.reader.read_newest(&profile.path) {
                w.losses
                    .set_restores_at_start(ffsession::watch::loss::restores_at_start(
                        &profile.path,
                    ));
                if let Some(loss) = w.losses.observe(&reading) {
                    debouncer.loss();
                    w.loss.get_or_insert(loss);
                }
            }
        }
        let now = start.elapsed();
        if debouncer.is_due(now) && retry_at.is_none_or(|at| now >= at) {
            let now_ms = super::now_ms();
            let at = Place {
                global,
                config: &config,
                store_dir: &store_dir,
                profile: &profile,
                policy: &policy,
                tz: &tz,
            };
            match w.cycle(&at, &mut alarms, &mut out, now_ms) {
                Ok(()) => {
                    retry_at = None;
                    debouncer.snapshot_taken(start.elapsed());
                }
                Err(CycleError::Locked(e)) => {
                    // Still locked after --lock-wait: try again later.
                    crate::ui::warning(format_args!(
                        "{e:#}; trying again in {}",
                        fmt::duration(LOCKED_RETRY)
                    ));
                    retry_at = Some(start.elapsed() + LOCKED_RETRY);
                    continue;
                }
                Err(CycleError::Output(e)) => return Err(e.into()),
                Err(CycleError::Failed(e)) => {
                    // The store cannot be written, the disk is full: said,
                    // remembered (a day of it is an alarm), tried again.
                    crate::ui::warning(format_args!(
                        "backup failed: {e:#}; trying again in {}",
                        fmt::duration(FAILED_RETRY)
                    ));
                    alarms.backup_failed(&format!("{e:#}"), now_ms);
                    retry_at = Some(start.elapsed() + FAILED_RETRY);
                    continue;
                }
            }
        }
        // Wake for the next read or due snapshot, and every 2 s to notice
        // Firefox exit.
        let mut wait = debouncer.due_at().map_or(Duration::from_secs(2), |at| {
            let at = retry_at.map_or(at, |r| r.max(at));
            at.saturating_sub(start.elapsed())
                .min(Duration::from_secs(2))
        });
        if let Some(at) = read_at {
            wait = wait.min(at.saturating_sub(start.elapsed()));
        }
        match rx.recv_timeout(wait) {
            Ok(Message::Stop) => break,
            Ok(Message::Changed(clean_exit)) => {
                if !watching_backups && backups.is_dir() {
                    watching_backups = watcher.watch(&backups, RecursiveMode::NonRecursive).is_ok();
                }
                if clean_exit && !lock_state(&profile.path).is_running() {
                    debouncer.firefox_exited();
                } else {
                    debouncer.changed();
                }
                // Read once the write's renames have settled.
                read_at = Some(start.elapsed() + SETTLE);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        let now_running = lock_state(&profile.path).is_running();
        if running && !now_running {
            debouncer.firefox_exited();
        }
        running = now_running;
    }
    writeln!(out, "stopped")?;
    Ok(())
}

/// Where a cycle works: the store, the profile, the policy.
struct Place<'a> {
    global: &'a GlobalArgs,
    config: &'a Config,
    store_dir: &'a Path,
    profile: &'a Profile,
    policy: &'a RetentionPolicy,
    tz: &'a TimeZone,
}

/// Why a cycle did not run.
enum CycleError {
    /// The store stayed locked past --lock-wait.
    Locked(anyhow::Error),
    /// The store could not be opened or written (said, retried, and an
    /// alarm after a day).
    Failed(anyhow::Error),
    /// stdout could not be written (its reader is gone): watch ends, as
    /// every command does.
    Output(io::Error),
}

/// What `watch` keeps from one cycle to the next.
struct Watch {
    notices: UnchangedNotices,
    /// The skip warnings of the last cycle: each is said once while it lasts.
    skip_warnings: HashSet<String>,
    last_verify: Option<Instant>,
    copies: crate::remote::WatchCopies,
    reader: Reader,
    losses: LossWatch,
    /// A loss a read saw, for the next cycle's alarm.
    loss: Option<Loss>,
}

impl Watch {
    /// One cycle: back up, prune, say what happened, raise the alarms, copy.
    fn cycle(
        &mut self,
        at: &Place<'_>,
        alarms: &mut Alarms,
        out: &mut impl Write,
        now_ms: u64,
    ) -> Result<(), CycleError> {
        let mut store = match super::create_store_waiting(at.global, at.store_dir) {
            Ok(store) => store,
            Err(e) if e.downcast_ref::<UserError>().is_some() => return Err(CycleError::Locked(e)),
            Err(e) => return Err(CycleError::Failed(e)),
        };
        let failed = |e: anyhow::Error| CycleError::Failed(e);
        // At the first cycle and daily: read back the newest snapshot of
        // each file, which an unchanged file relies on; a damaged one makes
        // this cycle store its file again, which heals it.
        if self
            .last_verify
            .is_none_or(|t| t.elapsed() >= VERIFY_INTERVAL)
        {
            self.last_verify = Some(Instant::now());
            for d in verify_newest(&store, &at.profile.name).map_err(|e| failed(e.into()))? {
                crate::ui::warning(format_args!(
                    "snapshot {} does not read back whole ({}); its file is stored again",
                    d.id, d.what
                ));
            }
        }
        let report = cycle(
            &mut store,
            &at.profile.name,
            &at.profile.path,
            now_ms,
            at.policy,
            at.tz,
        )
        .map_err(|e| failed(e.into()))?;
        let loss = self.loss.take();
        let alarm = report.backup.alarm.as_ref();
        // The good copy that brings the session back: what the loss's
        // cycle stored from recovery.baklz4 or previous.jsonlz4, else older.
        let way_back = match (&loss, alarm) {
            (None, None) => None,
            _ => {
                let previous = loss.as_ref().and_then(Loss::previous_tabs).or(match alarm {
                    Some(Alarm::Shrunken { previous_tabs, .. }) => Some(*previous_tabs),
                    _ => None,
                });
                good_copy(&store, &at.profile.name, previous.unwrap_or(0)).unwrap_or(None)
            }
        };
        drop(store);
        alarms.backup_ok(now_ms);
        let when = fmt::local_time_or_unknown(Some(now_ms));
        let stored = &report.backup.snapshots;
        let write = CycleError::Output;
        if !stored.is_empty() {
            let added: u64 = stored.iter().map(|s| s.stored_size).sum();
            writeln!(
                out,
                "{when}  {} (+{})",
                fmt::count(stored.len(), "file", "files"),
                fmt::size(added)
            )
            .map_err(write)?;
        }
        for u in self.notices.update(&report.backup) {
            writeln!(
                out,
                "{when}  {} unchanged since #{}, not stored",
                fmt::escape(&u.file),
                u.since
            )
            .map_err(write)?;
        }
        if let Some(p) = report.pruned.as_ref().filter(|p| p.removed > 0) {
            writeln!(
                out,
                "{when}  pruned {} (-{})",
                fmt::count(p.removed as usize, "snapshot", "snapshots"),
                fmt::size(p.gc.bytes_removed)
            )
            .map_err(write)?;
        }
        let warnings: HashSet<String> = report.backup.skipped.iter().map(skip_warning).collect();
        for w in &warnings {
            if !self.skip_warnings.contains(w) {
                crate::ui::warning(w);
            }
        }
        self.skip_warnings = warnings;
        // One line per alarm: a loss a read saw says it with its way back
        // (the backup's own alarm of the same loss would say it again).
        if let Some(loss) = &loss {
            crate::ui::warning(fmt::escape(&loss_line(loss, way_back.as_ref())));
        }
        match alarm {
            Some(a @ Alarm::Unreadable { .. }) => crate::ui::warning(fmt::escape(&a.to_string())),
            Some(a) if loss.is_none() => crate::ui::warning(fmt::escape(&a.to_string())),
            _ => {}
        }
        alarms.session(loss.as_ref(), alarm, way_back.as_ref(), now_ms);
        out.flush().map_err(write)?;
        // The copies watch makes; their outcome is remembered, and a day
        // of failures is an alarm.
        let tried: Vec<bool> = self
            .copies
            .remotes
            .iter()
            .map(|(_, _, owed)| *owed || !stored.is_empty())
            .collect();
        self.copies
            .after_cycle(at.global, at.config, at.store_dir, !stored.is_empty());
        for ((name, said, _), tried) in self.copies.remotes.iter().zip(tried) {
            if tried {
                alarms.copy(name, said.as_deref(), now_ms);
            }
        }
        alarms.save();
        Ok(())
    }
}

/// The log line of a loss a read saw between two snapshots.
fn loss_line(loss: &Loss, way_back: Option<&ffsession::store::SnapshotInfo>) -> String {
    let what = match loss {
        Loss::Shrunken {
            file,
            tabs,
            previous_tabs,
        } => format!(
            "Firefox wrote {file} with {tabs} tabs, down from {previous_tabs} a write before"
        ),
        Loss::Damaged { file, reason, .. } => format!("Firefox wrote {file} damaged: {reason}"),
    };
    match way_back {
        Some(s) => format!(
            "{what}; snapshot {} ({}) brings it back ({})",
            s.id,
            fmt::count(s.counts.map_or(0, |c| c.tabs) as usize, "tab", "tabs"),
            crate::context::quoted(&["restore", &format!("snapshot:{}", s.id)])
        ),
        None => format!("{what}; no good copy is stored"),
    }
}
