//! `ffsession backup`: snapshot every session file of a profile (or of every
//! profile) into the store.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use ffsession::backup::{backup_profile, Alarm, BackupReport};
use ffsession::profile::Profile;
use ffsession::sources::SkippedFile;

use super::prune::{apply_policy, KeepArgs};
use crate::cli::GlobalArgs;
use crate::config::Config;
use crate::error::{AlarmRaised, UserError};
use crate::fmt;

/// Snapshot every session file of the profile (sessionstore.jsonlz4 and the
/// recovery, previous and upgrade files in sessionstore-backups/) into the
/// backup store.
///
/// Only regular files with the names Firefox gives session files are taken,
/// up to 512 MiB each; no symbolic link is followed. Anything else found
/// in sessionstore-backups/, and a file that cannot be read, is left out with
/// a warning on stderr (and under "skipped" in --json), and the other files
/// are backed up.
///
/// Each file is verified (decompressed and parsed) before it counts as good;
/// content already in the store is not stored twice (a file that did not
/// change still gets a snapshot, a catalog row, so each backup is a complete
/// restore point; `watch` skips unchanged files instead). If the newest file
/// is damaged, or has lost more than half of the tabs of the last good
/// snapshot, backup says so on stderr and exits with code 3; the snapshot is
/// kept anyway, marked, so nothing is lost. If another ffsession (the watch
/// service) is using the store, backup waits for it, up to --lock-wait.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession backup
  ffsession backup --profile work --store /mnt/backup/ffsession-work
  ffsession backup --prune --keep-daily 30
  ffsession backup --all-profiles           every profile, each into its own store")]
pub struct BackupArgs {
    /// Apply the retention policy after backing up (see `ffsession prune`)
    #[arg(long)]
    pub prune: bool,

    #[command(flatten)]
    pub keep: KeepArgs,

    /// Back up every profile of profiles.ini, each into its own store
    /// (<data dir>/ffsession/<profile name>); a profile that fails is reported
    /// and the others go on; exits non-zero if any failed
    #[arg(long, conflicts_with = "json")]
    pub all_profiles: bool,

    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

pub fn run(global: &GlobalArgs, args: BackupArgs) -> Result<()> {
    let config = global.config()?;
    if args.all_profiles {
        return run_all(global, &config, &args);
    }
    let profile = global.profile()?;
    let store_dir = global.store_dir(&config, &profile)?;
    let report = back_up(global, &config, &args, &profile, &store_dir)?;
    alarm_result(&profile, report.alarm)
}

/// The profiles `--all-profiles` means, each with its store and the browser
/// that lists it (`Firefox`, `Zen (Flatpak)`); refuses a single store
/// (`--store`, config `store`) and `--profile`, which name one profile.
pub fn all_profiles(
    global: &GlobalArgs,
    config: &Config,
) -> Result<Vec<(Profile, PathBuf, String)>> {
    if global.profile.is_some() {
        return Err(UserError::with_hint(
            "--all-profiles and --profile cannot be used together",
            "drop one of them",
        ));
    }
    if global.store.is_some() || config.store.is_some() {
        return Err(UserError::with_hint(
            "--all-profiles puts each profile into its own store, but a single store is set (--store, $FFSESSION_STORE or `store` in the config file)",
            "unset it, or back up one profile at a time with --profile NAME --store DIR",
        ));
    }
    let roots = global.firefox_roots()?;
    let profiles: Vec<(usize, Profile)> = global.listed_profiles()?;
    if profiles.is_empty() {
        return Err(UserError::with_hint(
            "profiles.ini lists no profile",
            format!(
                "check --firefox-dir; {} lists what it finds",
                crate::context::quoted(&["profiles"])
            ),
        ));
    }
    let mut out: Vec<(Profile, PathBuf, String)> = Vec::with_capacity(profiles.len());
    // Two profiles whose names give one store name (the same name, names
    // apart only by case or by characters a folder name cannot hold): the
    // later one's store is kept apart by its folder, as a backup of it alone
    // would keep it once the first has named its store (`store::owner`).
    let key = |d: &Path| d.to_string_lossy().to_lowercase();
    for (root, p) in profiles {
        let mut dir = global.store_dir(config, &p)?;
        if out.iter().any(|(_, d, _)| key(d) == key(&dir)) {
            dir = ffsession::store::owner::apart(&dir, &p.path);
        }
        let browser = roots
            .get(root)
            .map_or_else(|| "Firefox".to_owned(), |r| r.label());
        out.push((p, dir, browser));
    }
    Ok(out)
}

fn run_all(global: &GlobalArgs, config: &Config, args: &BackupArgs) -> Result<()> {
    let profiles = all_profiles(global, config)?;
    let mut failed = Vec::new();
    let mut alarms = Vec::new();
    for (profile, dir, browser) in &profiles {
        // Each heading says whose profile and where: two browsers (or a
        // Firefox and its Snap) often both have a `default-release`.
        writeln!(
            io::stdout().lock(),
            "{browser} profile {} ({}):",
            fmt::escape(&profile.name),
            fmt::escape(&profile.path.display().to_string())
        )?;
        match back_up(global, config, args, profile, dir) {
            Ok(report) => {
                if let Err(e) = alarm_result(profile, report.alarm) {
                    crate::ui::warning(format_args!(
                        "profile \"{}\": {}",
                        fmt::escape(&profile.name),
                        fmt::escape(&format!("{e:#}"))
                    ));
                    alarms.push(fmt::escape(&profile.name).into_owned());
                }
            }
            // A profile Firefox never used (profiles.ini often lists an old
            // `default` one) has no session files and no store: skipped. One
            // backed up before that has lost its files is a failure.
            Err(e) if e.is::<NoSessionFiles>() && !dir.exists() => {
                crate::ui::note(format_args!(
                    "profile \"{}\" has no session files yet (Firefox has not used it): skipped",
                    fmt::escape(&profile.name)
                ));
            }
            Err(e) => {
                crate::ui::error(
                    &format!(
                        "profile \"{}\": {}",
                        fmt::escape(&profile.name),
                        fmt::escape(&format!("{e:#}"))
                    ),
                    crate::error::hint(&e, global).as_deref(),
                );
                failed.push(fmt::escape(&profile.name).into_owned());
            }
        }
    }
    if !failed.is_empty() {
        return Err(UserError::with_hint(
            format!(
                "{} of {} failed: {}",
                failed.len(),
                fmt::count(profiles.len(), "profile", "profiles"),
                failed.join(", ")
            ),
            "the other profiles were backed up; see the errors above",
        ));
    }
    if !alarms.is_empty() {
        return Err(AlarmRaised(format!(
            "the newest session file needs attention in {}: {}",
            fmt::count(alarms.len(), "profile", "profiles"),
            alarms.join(", ")
        ))
        .into());
    }
    Ok(())
}

/// A profile holds no session file: nothing was backed up.
#[derive(Debug)]
pub struct NoSessionFiles {
    profile: String,
    dir: PathBuf,
}

impl std::fmt::Display for NoSessionFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: no session files in profile \"{}\" (no sessionstore.jsonlz4, nothing in sessionstore-backups/): nothing was backed up",
            self.dir.display(),
            self.profile
        )
    }
}

impl std::error::Error for NoSessionFiles {}

/// Back up `profile` into `store_dir`, print the report, prune if asked.
fn back_up(
    global: &GlobalArgs,
    config: &Config,
    args: &BackupArgs,
    profile: &Profile,
    store_dir: &std::path::Path,
) -> Result<BackupReport> {
    // Nothing to back up is a failure to say, not an empty store: under a
    // timer it would go unnoticed.
    let files = ffsession::sources::list(&profile.path)?;
    if files.is_empty() {
        return Err(anyhow::Error::new(NoSessionFiles {
            profile: profile.name.clone(),
            dir: profile.path.clone(),
        }));
    }
    let mut store = super::create_store_waiting(global, store_dir)?;
    let now = super::now_ms();
    let report = backup_profile(&mut store, &profile.name, &profile.path, now)?;
    super::say_index_note(global, &mut store);
    print_skipped(&report.skipped)?;
    if args.json {
        super::print_json(&report)?;
    } else {
        let mut out = io::stdout().lock();
        for s in &report.snapshots {
            writeln!(out, "{}", fmt::snapshot_line(s))?;
        }
        writeln!(
            out,
            "{} stored in {} ({} new)",
            fmt::count(report.snapshots.len(), "snapshot", "snapshots"),
            fmt::path(store_dir),
            fmt::size(report.snapshots.iter().map(|s| s.stored_size).sum())
        )?;
        out.flush()?;
    }
    if args.prune {
        let policy = args.keep.policy(&config.prune);
        apply_policy(&mut store, &policy, false, args.json)?;
    }
    Ok(report)
}

/// One warning on stderr for each file the backup left out, with the reason
/// (in --json output too, as `skipped`).
pub fn print_skipped(skipped: &[SkippedFile]) -> io::Result<()> {
    for s in skipped {
        crate::ui::warning(skip_warning(s));
    }
    Ok(())
}

/// `skipped PATH: why`, escaped for the terminal.
pub fn skip_warning(s: &SkippedFile) -> String {
    format!(
        "skipped {}: {}",
        fmt::path(&s.path),
        fmt::escape(&s.reason.to_string())
    )
}

/// Exit code 3 with the alarm's message, if there is one.
fn alarm_result(profile: &Profile, alarm: Option<Alarm>) -> Result<()> {
    match alarm {
        Some(alarm) => {
            let mut message = fmt::escape(&alarm.to_string()).into_owned();
            if let Alarm::NewestCorrupt { file, .. } = &alarm {
                message.push_str(&format!(
                    " (hint: {} recovers its complete tabs)",
                    crate::context::quoted(&[
                        "rescue",
                        &crate::context::absolute(&profile.path.join(file)),
                        "-o",
                        "rescued.jsonlz4"
                    ])
                ));
            }
            if let Alarm::Unreadable { file, .. } = &alarm {
                message.push_str(&format!(
                    " (hint: make {} readable by you, e.g. `chmod u+r` on it, then back up again)",
                    fmt::path(&profile.path.join(file))
                ));
            }
            Err(AlarmRaised(message).into())
        }
        None => Ok(()),
    }
}
