//! `watch`'s alarms: each one a line on stderr (the service's log),
//! remembered in the state folder for `ffsession status`, and told to the
//! person as a desktop notification ([`crate::notify`]) at most once per kind
//! per hour (across restarts of `watch`), unless `[watch] notify = false`.
//!
//! The kinds: the newest session lost more than half of its tabs, or is
//! damaged, or cannot be read (at once); backups have failed for a day; a
//! `watch = true` remote's copies have failed for a day.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use ffsession::backup::Alarm;
use ffsession::store::SnapshotInfo;
use ffsession::watch::loss::Loss;
use ffsession::watch::state::{AlarmKind, AlarmRecord, WatchState};

use crate::cli::GlobalArgs;
use crate::notify::{Action, Notice};

/// The alarms of one `watch`, and what it remembers.
pub struct Alarms {
    /// `watch.json` in the store's state folder (`None`: no home folder).
    path: Option<PathBuf>,
    /// What is remembered.
    pub state: WatchState,
    notify: bool,
    /// The command context `watch` was given, for the commands a notice
    /// names.
    global: GlobalArgs,
    /// Said once: the state could not be written, notifications fail.
    said_save: bool,
    said_notify: bool,
}

impl Alarms {
    /// The alarms of the store `store_dir`, its state loaded (and marked as
    /// this process's); `notify` false keeps them off the desktop.
    pub fn new(global: &GlobalArgs, store_dir: &Path, notify: bool, now_ms: u64) -> Alarms {
        let path = crate::folders::state_dir(store_dir).map(|d| d.join("watch.json"));
        let state = match path.as_deref().map(WatchState::load) {
            Some(Ok(state)) => state,
            Some(Err(e)) => {
                crate::ui::warning(format_args!("{e}; starting without what watch remembered"));
                WatchState::default()
            }
            None => WatchState::default(),
        };
        let mut alarms = Alarms {
            path,
            state,
            notify,
            global: global.clone(),
            said_save: false,
            said_notify: false,
        };
        alarms.state.pid = Some(std::process::id());
        alarms.state.started_ms = Some(now_ms);
        alarms.save();
        alarms
    }

    /// Write the state (a failure is said once: a full disk, where the
    /// store is too).
    pub fn save(&mut self) {
        let Some(path) = &self.path else { return };
        match self.state.save(path) {
            Ok(()) => self.said_save = false,
            Err(e) if !self.said_save => {
                self.said_save = true;
                crate::ui::warning(format_args!(
                    "cannot remember the alarms: {e}; they are said here all the same"
                ));
            }
            Err(_) => {}
        }
    }

    /// The session alarm of a cycle: the loss a read saw (`loss`), else the
    /// backup's own alarm; `way_back` is the good copy that brings the
    /// session back.
    pub fn session(
        &mut self,
        loss: Option<&Loss>,
        alarm: Option<&Alarm>,
        way_back: Option<&SnapshotInfo>,
        now_ms: u64,
    ) {
        let (kind, summary) = match (loss, alarm) {
            (
                Some(Loss::Shrunken {
                    tabs,
                    previous_tabs,
                    ..
                }),
                _,
            )
            | (
                None,
                Some(Alarm::Shrunken {
                    tabs,
                    previous_tabs,
                    ..
                }),
            ) => (
                AlarmKind::Shrunken,
                format!("Firefox's session went from {previous_tabs} to {tabs} tabs"),
            ),
            (Some(Loss::Damaged { file, .. }), _)
            | (None, Some(Alarm::NewestCorrupt { file, .. })) => (
                AlarmKind::Damaged,
                format!("Firefox's session file {file} is damaged"),
            ),
            (None, Some(Alarm::Unreadable { file, error })) => {
                let message = format!("Firefox's session file {file} cannot be read: {error}");
                let notice = Notice {
                    summary: format!("Firefox's session file {file} cannot be read"),
                    body: format!("{error}. It is not backed up until it can be: check its permissions. Details: {}", self.command(&["status"])),
                    critical: true,
                    action: None,
                };
                self.raise(AlarmKind::Unreadable, message, None, notice, now_ms);
                return;
            }
            (None, None) => return,
        };
        let (body, action, snapshot, back) = match way_back {
            Some(s) => {
                let id = s.id.to_string();
                // `snapshot:N`: never a file of the folder it is run in.
                let named = format!("snapshot:{id}");
                let tabs = s.counts.map_or(0, |c| c.tabs);
                let body = format!(
                    "ffsession stored the session before it: snapshot {id}, {}. To get it back, quit Firefox and run: {}   (or see it first: {})",
                    crate::fmt::count(tabs as usize, "tab", "tabs"),
                    self.command(&["restore", &named]),
                    self.command(&["ui", "--snapshot", &id]),
                );
                let action = std::env::current_exe().ok().map(|program| Action {
                    label: format!("Open snapshot {id}"),
                    program,
                    args: self.args(&["ui", "--snapshot", &id]),
                });
                let back = format!(
                    "snapshot {id} ({}) brings it back (`{}`)",
                    crate::fmt::count(tabs as usize, "tab", "tabs"),
                    self.command(&["restore", &named])
                );
                (body, action, Some(s.id.0), back)
            }
            None => (
                format!(
                    "No good copy is stored. `{}` lists the snapshots; `{}` recovers the complete tabs of a damaged file.",
                    self.command(&["list"]),
                    self.command(&["rescue", "FILE", "-o", "OUT"])
                ),
                None,
                None,
                "no good copy is stored".to_owned(),
            ),
        };
        let message = format!("{summary}; {back}");
        let notice = Notice {
            summary,
            body,
            critical: true,
            action,
        };
        self.raise(kind, message, snapshot, notice, now_ms);
    }

    /// A cycle failed (the store cannot be written, the disk is full):
    /// after a day of failures, an alarm.
    pub fn backup_failed(&mut self, error: &str, now_ms: u64) {
        if self.state.backups.failed(now_ms, error.to_owned()) {
            let notice = Notice {
                summary: "ffsession has not backed up Firefox's session for a day".into(),
                body: format!("{error}. Details: {}", self.command(&["status"])),
                critical: false,
                action: None,
            };
            let message = format!("backups have failed for a day: {error}");
            self.raise(AlarmKind::BackupsFailing, message, None, notice, now_ms);
        }
        self.save();
    }

    /// A cycle worked.
    pub fn backup_ok(&mut self, now_ms: u64) {
        self.state.backups.ok(now_ms);
        self.state.last_cycle_ms = Some(now_ms);
    }

    /// A copy to the remote `name` was tried: `error` is its failure.
    pub fn copy(&mut self, name: &str, error: Option<&str>, now_ms: u64) {
        let remote = self.state.remotes.entry(name.to_owned()).or_default();
        let Some(error) = error else {
            remote.ok(now_ms);
            return;
        };
        if remote.failed(now_ms, error.to_owned()) {
            let notice = Notice {
                summary: format!("ffsession's copies to {name} have failed for a day"),
                body: format!(
                    "{error}. `{}` says why.",
                    self.command(&["copy", "--to", name])
                ),
                critical: false,
                action: None,
            };
            let message = format!("copies to {name} have failed for a day: {error}");
            let kind = AlarmKind::CopyFailing {
                remote: name.to_owned(),
            };
            self.raise(kind, message, None, notice, now_ms);
        }
    }

    /// Record an alarm, and tell the person unless one of its kind was told
    /// within the hour or notifications are off.
    fn raise(
        &mut self,
        kind: AlarmKind,
        message: String,
        snapshot: Option<i64>,
        notice: Notice,
        now_ms: u64,
    ) {
        let mut notified = false;
        if self.notify && self.state.may_notify(&kind, now_ms) {
            match crate::notify::send(&notice) {
                Ok(()) => {
                    notified = true;
                    self.said_notify = false;
                }
                Err(e) => {
                    // Not told: the next alarm of its kind may try again.
                    self.state.notified.remove(&kind.key());
                    if !std::mem::replace(&mut self.said_notify, true) {
                        crate::ui::warning(format_args!(
                            "could not show a desktop notification ({e}); alarms are in this log and in `{}`",
                            self.command(&["status"])
                        ));
                    }
                }
            }
        }
        self.state.record(AlarmRecord {
            at_ms: now_ms,
            kind,
            message,
            snapshot,
            notified,
        });
        self.save();
    }

    /// The arguments of an `ffsession` command in `watch`'s command
    /// context.
    fn args(&self, command: &[&str]) -> Vec<OsString> {
        let mut args: Vec<OsString> = self.global.context().into_iter().map(Into::into).collect();
        args.extend(command.iter().map(OsString::from));
        args
    }

    /// An `ffsession` command line in `watch`'s command context, as a
    /// person types it.
    fn command(&self, command: &[&str]) -> String {
        self.global.command(command)
    }
}
