//! `ffsession watch`: back up whenever Firefox writes its session.

use std::collections::HashSet;
use std::io::{self, Write};
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use ffsession::profile::lock_state;
use ffsession::watch::{
    cycle, verify_newest, Debouncer, UnchangedNotices, DEFAULT_INTERVAL, VERIFY_INTERVAL,
};
use jiff::tz::TimeZone;
use notify::{RecursiveMode, Watcher};

use super::backup::skip_warning;
use super::prune::KeepArgs;
use crate::cli::GlobalArgs;
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
#[derive(Debug, Args)]
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
    // locked again only while each snapshot is taken.
    drop(super::create_store_waiting(global, &store_dir)?);

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
    let mut notices = UnchangedNotices::default();
    // The skip warnings of the last cycle: each is said once while it lasts.
    let mut skip_warnings: HashSet<String> = HashSet::new();
    let mut retry_at: Option<Duration> = None;
    let mut running = lock_state(&profile.path).is_running();
    let mut last_verify: Option<Duration> = None;
    let mut copies = crate::remote::WatchCopies::new(&config);
    loop {
        if last_verify.is_some_and(|at| start.elapsed() >= at + VERIFY_INTERVAL) {
            debouncer.changed();
        }
        let now = start.elapsed();
        if debouncer.is_due(now) && retry_at.is_none_or(|at| now >= at) {
            let mut store = match super::create_store_waiting(global, &store_dir) {
                Ok(store) => store,
                Err(e) if e.downcast_ref::<UserError>().is_some() => {
                    // Still locked after --lock-wait: try again later.
                    crate::ui::warning(format_args!(
                        "{e:#}; trying again in {}",
                        fmt::duration(LOCKED_RETRY)
                    ));
                    retry_at = Some(start.elapsed() + LOCKED_RETRY);
                    continue;
                }
                Err(e) => return Err(e),
            };
            retry_at = None;
            // At the first cycle and daily: read back the newest snapshot of
            // each file, which an unchanged file relies on; a damaged one makes
            // this cycle store its file again, which heals it.
            if last_verify.is_none_or(|at| start.elapsed() >= at + VERIFY_INTERVAL) {
                last_verify = Some(start.elapsed());
                for d in verify_newest(&store, &profile.name)? {
                    crate::ui::warning(format_args!(
                        "snapshot {} does not read back whole ({}); its file is stored again",
                        d.id, d.what
                    ));
                }
            }
            let now_ms = super::now_ms();
            let report = cycle(
                &mut store,
                &profile.name,
                &profile.path,
                now_ms,
                &policy,
                &tz,
            )?;
            drop(store);
            debouncer.snapshot_taken(start.elapsed());
            let when = fmt::local_time_or_unknown(Some(now_ms));
            let stored = &report.backup.snapshots;
            if !stored.is_empty() {
                let added: u64 = stored.iter().map(|s| s.stored_size).sum();
                writeln!(
                    out,
                    "{when}  {} (+{})",
                    fmt::count(stored.len(), "file", "files"),
                    fmt::size(added)
                )?;
            }
            for u in notices.update(&report.backup) {
                writeln!(
                    out,
                    "{when}  {} unchanged since #{}, not stored",
                    fmt::escape(&u.file),
                    u.since
                )?;
            }
            if let Some(p) = report.pruned.filter(|p| p.removed > 0) {
                writeln!(
                    out,
                    "{when}  pruned {} (-{})",
                    fmt::count(p.removed as usize, "snapshot", "snapshots"),
                    fmt::size(p.gc.bytes_removed)
                )?;
            }
            let warnings: HashSet<String> =
                report.backup.skipped.iter().map(skip_warning).collect();
            for s in &report.backup.skipped {
                let w = skip_warning(s);
                if !skip_warnings.contains(&w) {
                    crate::ui::warning(w);
                }
            }
            skip_warnings = warnings;
            if let Some(alarm) = &report.backup.alarm {
                crate::ui::warning(fmt::escape(&alarm.to_string()));
            }
            out.flush()?;
            copies.after_cycle(global, &config, &store_dir, !stored.is_empty());
        }
        // Wake for the next due snapshot, and every 2 s to notice Firefox exit.
        let wait = debouncer.due_at().map_or(Duration::from_secs(2), |at| {
            let at = retry_at.map_or(at, |r| r.max(at));
            at.saturating_sub(start.elapsed())
                .min(Duration::from_secs(2))
        });
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
