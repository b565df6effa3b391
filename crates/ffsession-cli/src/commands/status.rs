//! `ffsession status`: one screen for "is it working?".

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use ffsession::profile::{lock_state, Profile};
use ffsession::retention::is_shrunken;
use ffsession::store::{SnapshotInfo, Store};
use ffsession::watch::loss::good_copy;
use ffsession::watch::state::{AlarmRecord, CheckRecord, WatchState, FAILING_ALARM_AFTER_MS};
use serde::Serialize;

use super::service::ServiceState;
use crate::cli::GlobalArgs;
use crate::config::Config;
use crate::error::NeedsYou;
use crate::fmt;

/// Is it working? For each profile watched: the background service's state,
/// the last snapshot and its age, the alarms of the last 7 days, the last
/// `check` of its store; for each remote of the config file, the last copy
/// `watch` made there. Then what needs you, each with what to do.
///
/// Without --profile, every profile of profiles.ini with a service, a store
/// or a watch's record (else the default profile). The exit code is 6 when
/// something needs you (the service stopped or not installed, backups
/// failing, copies to a remote failing for a day, the newest session lost
/// or damaged, no snapshot yet, the last check found damage), 0 when all is well: a monitoring script needs
/// only that.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession status                     every profile watched, and the remotes
  ffsession status --profile work      one profile
  ffsession status --json              the same as JSON, for scripts
  ffsession status -q >/dev/null || notify-send 'ffsession needs you'   in a cron job")]
pub struct StatusArgs {
    /// Print the status as JSON (the same fields, times in ms since the Unix
    /// epoch)
    #[arg(long)]
    pub json: bool,
}

/// Alarms older than this are not shown.
const ALARM_DAYS: u64 = 7;
const DAY_MS: u64 = 24 * 60 * 60 * 1000;

/// One profile's status.
#[derive(Debug, Serialize)]
struct ProfileStatus {
    profile: String,
    folder: PathBuf,
    store: PathBuf,
    firefox_running: bool,
    service: ServiceState,
    /// The watch process that last wrote the record, if it still runs.
    watch_pid: Option<u32>,
    last_cycle_ms: Option<u64>,
    backups_failing_since_ms: Option<u64>,
    backup_error: Option<String>,
    last_snapshot: Option<Snapshot>,
    /// The newest session, when it is damaged or lost most of its tabs.
    session_alarm: Option<SessionAlarm>,
    /// The alarms of the last 7 days, oldest first.
    alarms: Vec<AlarmRecord>,
    last_check: Option<CheckRecord>,
    needs_you: Vec<String>,
    /// `ffsession check` of this profile and store, for the text.
    #[serde(skip)]
    check_command: String,
}

#[derive(Debug, Serialize)]
struct Snapshot {
    id: i64,
    taken_at_ms: u64,
    file: String,
    tabs: Option<u64>,
    ok: bool,
}

#[derive(Debug, Serialize)]
struct SessionAlarm {
    message: String,
    /// The snapshot that brings the session back.
    snapshot: Option<i64>,
}

/// One remote's status.
#[derive(Debug, Serialize)]
struct RemoteStatus {
    name: String,
    location: String,
    watch: bool,
    last_copy_ms: Option<u64>,
    failing_since_ms: Option<u64>,
    last_error: Option<String>,
    needs_you: Vec<String>,
}

#[derive(Debug, Serialize)]
struct Status {
    profiles: Vec<ProfileStatus>,
    remotes: Vec<RemoteStatus>,
    needs_you: bool,
}

pub fn run(global: &GlobalArgs, args: StatusArgs) -> Result<()> {
    let config = global.config()?;
    let now = super::now_ms();
    let profiles = watched_profiles(global, &config)?;
    let mut status = Status {
        profiles: Vec::new(),
        remotes: Vec::new(),
        needs_you: false,
    };
    let mut watch_states = Vec::new();
    for p in &profiles {
        let (s, w) = profile_status(global, &config, p, now)?;
        status.profiles.push(s);
        watch_states.push(w);
    }
    for (name, rc) in &config.remotes {
        let copies = watch_states
            .iter()
            .filter_map(|w| w.remotes.get(name))
            .max_by_key(|f| f.last_ok_ms);
        let mut r = RemoteStatus {
            name: name.clone(),
            location: rc.location.clone(),
            watch: rc.watch,
            last_copy_ms: copies.and_then(|f| f.last_ok_ms),
            failing_since_ms: copies.and_then(|f| f.failing_since_ms),
            last_error: copies.and_then(|f| f.last_error.clone()),
            needs_you: Vec::new(),
        };
        // A remote away for a while (a laptop off its network) is no
        // alarm; a day of it is, as `watch` says on the desktop.
        if let Some(since) = r
            .failing_since_ms
            .filter(|&since| now.saturating_sub(since) >= FAILING_ALARM_AFTER_MS)
        {
            r.needs_you.push(format!(
                "copies to {name} have failed since {} ({}): run {} to see why",
                fmt::local_time_or_unknown(Some(since)),
                r.last_error.as_deref().unwrap_or("no message"),
                global.quoted(&["copy", "--to", name])
            ));
        }
        status.remotes.push(r);
    }
    status.needs_you = status.profiles.iter().any(|p| !p.needs_you.is_empty())
        || status.remotes.iter().any(|r| !r.needs_you.is_empty());
    if args.json {
        super::print_json(&status)?;
    } else {
        print_text(&status, now)?;
    }
    if status.needs_you {
        let n = status
            .profiles
            .iter()
            .map(|p| p.needs_you.len())
            .sum::<usize>()
            + status
                .remotes
                .iter()
                .map(|r| r.needs_you.len())
                .sum::<usize>();
        return Err(NeedsYou(fmt::count(n, "thing needs you", "things need you")).into());
    }
    Ok(())
}

/// The profiles to show: `--profile`, else those of profiles.ini with a
/// service, a store or a watch's record, else the default one.
fn watched_profiles(global: &GlobalArgs, config: &Config) -> Result<Vec<Profile>> {
    if global.profile.is_some() || global.store.is_some() || config.store.is_some() {
        return Ok(vec![global.profile()?]);
    }
    let listed = global.listed_profiles().unwrap_or_default();
    let watched: Vec<Profile> = listed
        .into_iter()
        .map(|(_, p)| p)
        .filter(|p| {
            let store = global.data_store_dir(p).ok();
            !matches!(
                super::service::state(global, p),
                ServiceState::NotInstalled(_)
            ) || store
                .as_deref()
                .is_some_and(|d| d.join("catalog.sqlite").exists())
                || store
                    .as_deref()
                    .and_then(crate::folders::state_dir)
                    .is_some_and(|d| d.join("watch.json").exists())
        })
        .collect();
    if watched.is_empty() {
        return Ok(vec![global.profile()?]);
    }
    Ok(watched)
}

fn profile_status(
    global: &GlobalArgs,
    config: &Config,
    p: &Profile,
    now: u64,
) -> Result<(ProfileStatus, WatchState)> {
    let store_dir = global.store_dir(config, p)?;
    // The commands said for this profile name it: status shows several.
    let here = GlobalArgs {
        profile: Some(p.path.to_string_lossy().into_owned()),
        ..global.clone()
    };
    let state_dir = crate::folders::state_dir(&store_dir);
    let load = |name: &str| state_dir.as_ref().map(|d| d.join(name));
    let watch = load("watch.json")
        .and_then(|f| WatchState::load(&f).ok())
        .unwrap_or_default();
    let last_check = load("check.json").and_then(|f| CheckRecord::load(&f).ok().flatten());
    let service = super::service::state(global, p);
    let watch_pid = watch.pid.filter(|&pid| is_watch(pid));
    let mut s = ProfileStatus {
        profile: p.name.clone(),
        folder: p.path.clone(),
        store: store_dir.clone(),
        firefox_running: lock_state(&p.path).is_running(),
        service,
        watch_pid,
        last_cycle_ms: watch.last_cycle_ms,
        backups_failing_since_ms: watch.backups.failing_since_ms,
        backup_error: watch.backups.last_error.clone(),
        last_snapshot: None,
        session_alarm: None,
        alarms: watch
            .alarms
            .iter()
            .filter(|a| now.saturating_sub(a.at_ms) < ALARM_DAYS * DAY_MS)
            .cloned()
            .collect(),
        last_check,
        needs_you: Vec::new(),
        check_command: here.quoted(&["check"]),
    };
    let store = Store::open_read_only(&store_dir).ok();
    if let Some(store) = &store {
        let snapshots = store.snapshots().unwrap_or_default();
        s.last_snapshot = snapshots.iter().max_by_key(|x| x.id).map(|x| Snapshot {
            id: x.id.0,
            taken_at_ms: x.taken_at_ms,
            file: x.file_name.clone(),
            tabs: x.counts.map(|c| c.tabs),
            ok: x.is_ok(),
        });
        s.session_alarm = session_alarm(store, &p.name, &here);
    }
    let needs = &mut s.needs_you;
    match &s.service {
        ServiceState::Stopped(what) => needs.push(format!(
            "the service is not running ({what}): {} starts it again",
            here.quoted(&["service", "install"])
        )),
        ServiceState::NotInstalled(_) if s.watch_pid.is_none() => needs.push(format!(
            "nothing backs this profile up when Firefox writes: {} runs `watch` at every login",
            here.quoted(&["service", "install"])
        )),
        _ => {}
    }
    if let Some(since) = s.backups_failing_since_ms {
        needs.push(format!(
            "backups have failed since {}: {}",
            fmt::local_time_or_unknown(Some(since)),
            s.backup_error.as_deref().unwrap_or("no message")
        ));
    }
    if s.last_snapshot.is_none() {
        needs.push(format!(
            "no snapshot in {} yet: {} takes one",
            fmt::path(&store_dir),
            here.quoted(&["backup"])
        ));
    }
    if let Some(a) = &s.session_alarm {
        needs.push(a.message.clone());
    }
    if let Some(c) = &s.last_check {
        if c.outcome != "whole" {
            needs.push(format!(
                "the last check ({}) found: {}; {} says more",
                fmt::local_time_or_unknown(Some(c.at_ms)),
                c.summary,
                s.check_command
            ));
        }
    }
    Ok((s, watch))
}

/// The newest session of `profile` (by its own time), when it is damaged or
/// lost more than half of the tabs of the newest good one before it: what
/// `backup` raises the alarm for, until a later session is good again.
fn session_alarm(store: &Store, profile: &str, here: &GlobalArgs) -> Option<SessionAlarm> {
    let all: Vec<SnapshotInfo> = store
        .snapshots_by_session_time()
        .ok()?
        .into_iter()
        .filter(|s| s.profile == profile && !s.kind.is_zen())
        .collect();
    let newest = all.first()?;
    let good_before = all[1..].iter().find(|s| s.is_ok() && s.counts.is_some());
    let (what, previous) = match (newest.is_ok(), newest.counts, good_before) {
        (false, _, _) => (
            format!(
                "the newest session (snapshot {}, {}) is damaged",
                newest.id, newest.file_name
            ),
            good_before.and_then(|g| g.counts).map_or(0, |c| c.tabs),
        ),
        (true, Some(c), Some(g)) => {
            let before = g.counts.map_or(0, |c| c.tabs);
            if !is_shrunken(before, c.tabs) {
                return None;
            }
            (
                format!(
                    "Firefox's session went from {before} to {} tabs (snapshot {})",
                    c.tabs, newest.id
                ),
                before,
            )
        }
        _ => return None,
    };
    let way_back = good_copy(store, profile, previous).ok().flatten();
    let message = match &way_back {
        Some(g) => format!(
            "{what}: quit Firefox and run {} to get {} back",
            here.quoted(&["restore", &format!("snapshot:{}", g.id)]),
            fmt::count(g.counts.map_or(0, |c| c.tabs) as usize, "tab", "tabs")
        ),
        None => format!("{what}; no good copy is stored"),
    };
    Some(SessionAlarm {
        message,
        snapshot: way_back.map(|g| g.id.0),
    })
}

/// Whether `pid` is a running `ffsession watch` (Linux: its command line;
/// elsewhere it cannot be told, and the record is taken as it is).
fn is_watch(pid: u32) -> bool {
    if cfg!(target_os = "linux") {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|c| c.split(|&b| b == 0).any(|arg| arg == b"watch".as_slice()))
    } else {
        true
    }
}

/// "3 min ago" for a time in ms since the Unix epoch.
fn ago(ms: u64, now: u64) -> String {
    let secs = now.saturating_sub(ms) / 1000;
    let age = match secs {
        0..60 => format!("{secs} s"),
        60..7200 => format!("{} min", secs / 60),
        7200..172_800 => format!("{} h", secs / 3600),
        _ => format!("{} days", secs / 86_400),
    };
    format!("{age} ago ({})", fmt::local_time_or_unknown(Some(ms)))
}

fn print_text(status: &Status, now: u64) -> Result<()> {
    let mut out = io::stdout().lock();
    for p in &status.profiles {
        writeln!(
            out,
            "profile {} ({})",
            fmt::escape(&p.profile),
            fmt::path(&p.folder)
        )?;
        let service = match &p.service {
            ServiceState::Running(d) => format!("running ({d})"),
            ServiceState::Stopped(d) => format!("STOPPED ({d})"),
            ServiceState::NotInstalled(d) => format!("not installed ({d})"),
            ServiceState::Unknown(d) => format!("cannot tell ({d})"),
        };
        writeln!(out, "  service:        {service}")?;
        let watch = match (p.watch_pid, p.last_cycle_ms) {
            (Some(pid), Some(at)) => format!("running (pid {pid}), last cycle {}", ago(at, now)),
            (Some(pid), None) => format!("running (pid {pid})"),
            (None, Some(at)) => format!("not running; its last cycle {}", ago(at, now)),
            (None, None) => "never ran for this store".into(),
        };
        writeln!(out, "  watch:          {watch}")?;
        if let Some(since) = p.backups_failing_since_ms {
            writeln!(
                out,
                "  backups:        FAILING since {}: {}",
                ago(since, now),
                p.backup_error.as_deref().unwrap_or("")
            )?;
        }
        let snapshot = match &p.last_snapshot {
            Some(s) => format!(
                "#{}, {}, {}{}",
                s.id,
                ago(s.taken_at_ms, now),
                fmt::escape(&s.file),
                match (s.ok, s.tabs) {
                    (true, Some(t)) => format!(", {}", fmt::count(t as usize, "tab", "tabs")),
                    _ => ", CORRUPT".into(),
                }
            ),
            None => "none".into(),
        };
        writeln!(out, "  last snapshot:  {snapshot}")?;
        writeln!(
            out,
            "  firefox:        {}",
            if p.firefox_running {
                "running"
            } else {
                "not running"
            }
        )?;
        if p.alarms.is_empty() {
            writeln!(out, "  alarms:         none in the last {ALARM_DAYS} days")?;
        } else {
            writeln!(
                out,
                "  alarms:         {} in the last {ALARM_DAYS} days:",
                p.alarms.len()
            )?;
            for a in &p.alarms {
                writeln!(
                    out,
                    "    {}  {}{}",
                    fmt::local_time_or_unknown(Some(a.at_ms)),
                    fmt::escape(&a.message),
                    if a.notified { " (notified)" } else { "" }
                )?;
            }
        }
        let check = match &p.last_check {
            Some(c) => format!("{}: {}", ago(c.at_ms, now), c.summary),
            None => format!("never ({} reads every snapshot back)", p.check_command),
        };
        writeln!(out, "  last check:     {check}")?;
        writeln!(out, "  store:          {}", fmt::path(&p.store))?;
    }
    for r in &status.remotes {
        writeln!(
            out,
            "remote {} ({}){}",
            fmt::escape(&r.name),
            fmt::escape(&r.location),
            if r.watch {
                ", copied by watch"
            } else {
                ", not copied by watch (watch = false)"
            }
        )?;
        let last = match r.last_copy_ms {
            Some(at) => ago(at, now),
            None => "none by watch".into(),
        };
        writeln!(out, "  last copy:      {last}")?;
        if let Some(since) = r.failing_since_ms {
            writeln!(
                out,
                "  copies:         FAILING since {}: {}",
                ago(since, now),
                r.last_error.as_deref().unwrap_or("")
            )?;
        }
    }
    let needs: Vec<&String> = status
        .profiles
        .iter()
        .flat_map(|p| &p.needs_you)
        .chain(status.remotes.iter().flat_map(|r| &r.needs_you))
        .collect();
    if needs.is_empty() {
        writeln!(out, "all is well")?;
    } else {
        writeln!(out, "needs you:")?;
        for n in needs {
            writeln!(out, "  - {}", fmt::escape(n))?;
        }
    }
    out.flush()?;
    Ok(())
}
