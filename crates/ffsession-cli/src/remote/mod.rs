//! Remote stores in the CLI: reading a location (a URL, a folder holding a
//! remote store, or the name of a remote in the config file), its settings
//! from the usual environment variables and the config, the password, the
//! local cache a remote is read through, and the copy `watch` makes after
//! each cycle.
//!
//! ```toml
//! host = "laptop"                  # how this machine's snapshots are tagged (default: its host name)
//!
//! [remotes.nas]
//! location = "sftp://me@nas.local/backups/ffsession"
//! password_file = "~/.config/ffsession/nas.password"
//! watch = true                     # `watch` copies to it after each cycle
//!
//! [remotes.b2]
//! location = "s3://my-bucket/ffsession"
//! endpoint = "https://s3.eu-central-003.backblazeb2.com"
//! region = "eu-central-003"        # keys: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY
//! ```

use std::collections::{BTreeMap, HashSet};
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use ffsession::machine::Machine;
use ffsession::remote::{
    open_backend, sync_from_remote, Location, Remote, RemoteError, SyncProgress,
};
use ffsession::store::Store;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Deserialize;

use crate::cli::GlobalArgs;
use crate::config::Config;
use crate::error::UserError;

pub mod kept;
mod secrets;

use secrets::{env, key_params};
pub use secrets::{options, password};

/// A `[remotes.NAME]` table of the config file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteConfig {
    /// The location: a URL or a folder.
    pub location: String,
    /// A file holding the password (first line).
    pub password_file: Option<PathBuf>,
    /// `watch` copies to this remote after each cycle.
    #[serde(default)]
    pub watch: bool,
    /// S3: the endpoint URL.
    pub endpoint: Option<String>,
    /// S3: the region.
    pub region: Option<String>,
    /// SFTP: a private key file (else the SSH set-up's choice).
    pub ssh_key: Option<PathBuf>,
    /// WebDAV: a file holding the password.
    pub webdav_password_file: Option<PathBuf>,
    /// Keep the remote's key on this machine after the password opened it
    /// once, so the next command needs no password (default: true).
    pub keep_key: Option<bool>,
}

/// A remote location with everything needed to open it.
#[derive(Debug, Clone)]
pub struct Target {
    /// What the user called it (a config name or the location).
    pub label: String,
    /// Where it is.
    pub location: Location,
    /// Its settings.
    pub config: RemoteConfig,
}

/// True if `value` names a remote store: a URL, a config remote's name, or a
/// folder holding `ffsession-remote.json`.
pub fn is_remote(value: &Path, config: &Config) -> bool {
    let text = value.to_string_lossy();
    Location::is_url(&text)
        || config.remotes.contains_key(text.as_ref())
        || value.join("ffsession-remote.json").is_file()
        // A URL mistyped (`sftp:/host/path`): said by `target`.
        || (!text.is_empty() && Location::parse(&text).is_err())
}

/// True if `value` is a bare word: no URL, no folder separator. For
/// `copy --to`, a bare word names a remote of the config file; a folder
/// takes a path with a separator (`./usb`).
fn is_bare_word(value: &str) -> bool {
    let separator = |c: char| c == '/' || (cfg!(windows) && c == '\\');
    !value.contains(separator)
}

/// The remote `value` names (a config remote's name, or a location).
pub fn target(value: &str, config: &Config) -> Result<Target> {
    if let Some(rc) = config.remotes.get(value) {
        return Ok(Target {
            label: value.to_owned(),
            location: Location::parse(&rc.location).map_err(remote_error)?,
            config: rc.clone(),
        });
    }
    // A bare word names a remote of the config (or a folder that holds a
    // remote store already): never a new folder in the current one.
    if is_bare_word(value)
        && !value.trim().is_empty()
        && !value.contains(':')
        && !Path::new(value).join("ffsession-remote.json").is_file()
    {
        let names: Vec<&str> = config.remotes.keys().map(String::as_str).collect();
        let named = if names.is_empty() {
            format!("name it in the config file: a [remotes.{value}] table with its location")
        } else {
            format!("the config file names {}", names.join(", "))
        };
        return Err(UserError::with_hint(
            format!("no remote named {value:?} in the config file"),
            format!("{named}; a folder is a path with a slash (./{value}), a server a URL (sftp://host/path)"),
        ));
    }
    // A location also named in the config takes that remote's settings.
    let location = Location::parse(value).map_err(remote_error)?;
    let config = config
        .remotes
        .values()
        .find(|rc| Location::parse(&rc.location).ok().as_ref() == Some(&location))
        .cloned()
        .unwrap_or_default();
    Ok(Target {
        label: value.to_owned(),
        location,
        config,
    })
}

/// An error of the library as the CLI shows it: one line, with its hint.
pub fn remote_error(e: RemoteError) -> anyhow::Error {
    match e {
        RemoteError::Store(e) => anyhow::Error::new(e),
        e => match e.hint() {
            Some(hint) => anyhow::Error::new(crate::error::Hinted {
                message: e.to_string(),
                hint,
            }),
            None => anyhow::Error::new(e),
        },
    }
}

/// Open the remote; with `create`, make it if the location is empty.
/// Returns it and whether it was created.
pub fn open(
    global: &GlobalArgs,
    t: &Target,
    create: bool,
    interactive: bool,
) -> Result<(Remote, bool)> {
    let backend = open_backend(&t.location, &options(t)?).map_err(remote_error)?;
    // The key this machine kept: no password, no key stretching.
    let backend = match kept::open(t, backend)? {
        Ok(remote) => return Ok((remote, false)),
        Err(backend) => backend,
    };
    if !create {
        let pw = password(global, t, false, interactive)?;
        return Ok((open_existing(backend, &pw, t)?, false));
    }
    // Asked twice only when the location is new.
    let fresh = backend
        .read(ffsession::remote::Kind::Marker, "ffsession-remote.json")
        .map_err(remote_error)?
        .is_none()
        && backend
            .list(ffsession::remote::Kind::Keys)
            .map_err(remote_error)?
            .is_empty();
    let pw = password(global, t, fresh, interactive)?;
    if !fresh {
        return Ok((open_existing(backend, &pw, t)?, false));
    }
    let note = format!("made on {}", host_name(&global.config()?));
    let (remote, created) =
        Remote::open_or_create(backend, &pw, key_params(), &note).map_err(remote_error)?;
    keep_spare_key(&remote, &t.location);
    kept::keep(&remote, t);
    Ok((remote, created))
}

/// Open an existing remote, with this machine's spare of its key file for
/// when every copy on the remote is damaged or gone, and keep (or renew)
/// that spare.
fn open_existing(
    backend: Box<dyn ffsession::remote::Backend>,
    password: &str,
    t: &Target,
) -> Result<Remote> {
    let location = &t.location;
    let spare = cache_dir(location)
        .ok()
        .and_then(|d| std::fs::read(d.join(SPARE_KEY)).ok());
    let remote =
        Remote::open_with_spare(backend, password, spare.as_deref()).map_err(remote_error)?;
    if spare.as_deref() != Some(remote.key_file()) {
        keep_spare_key(&remote, location);
    }
    kept::keep(&remote, t);
    Ok(remote)
}

/// The spare of a remote's key file in its cache folder (still wrapped with
/// the password, as on the remote).
const SPARE_KEY: &str = "key.age";

/// Keep a spare of the key file that opened `remote` in its cache folder
/// (0600 in a 0700 folder); a failure only means no spare.
fn keep_spare_key(remote: &Remote, location: &Location) {
    let Ok(dir) = cache_dir(location) else { return };
    if create_private_dirs(&dir).is_err() {
        return;
    }
    let path = dir.join(SPARE_KEY);
    let bytes = remote.key_file().to_vec();
    let _ = ffsession::fs_util::write_atomic(&path, |w: &mut dyn Write| w.write_all(&bytes));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600));
    }
}

/// The file that keeps this machine's identity, in ffsession's config
/// folder.
pub const MACHINE_ID_FILE: &str = "machine-id";

/// This machine: its identity, kept in `machine-id` in ffsession's config
/// folder (made the first time a remote needs it), and its label, the
/// config's `host` or the host name. Two machines of one label are told
/// apart by it; copying the config folder to another machine copies the
/// identity too (remove `machine-id` there to make a new one).
pub fn machine(config: &Config) -> Result<Machine> {
    let folders = crate::folders::folders().ok_or_else(|| {
        UserError::with_hint(
            "cannot find ffsession's config folder, where this machine's identity is kept",
            "set HOME (or XDG_CONFIG_HOME)",
        )
    })?;
    let path = ffsession::platform::Platform::CURRENT
        .config_dir(&folders)
        .join(MACHINE_ID_FILE);
    Ok(Machine::load_or_create(&path, host_name(config))?)
}

/// This machine's name, as snapshot records carry it: the config's `host`,
/// else the system's host name.
pub fn host_name(config: &Config) -> String {
    if let Some(h) = &config.host {
        return h.clone();
    }
    let from_file = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty());
    from_file
        .or_else(|| env("COMPUTERNAME"))
        .or_else(|| env("HOSTNAME"))
        .or_else(|| {
            std::process::Command::new("hostname")
                .output()
                .ok()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
                .filter(|s| !s.is_empty())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// The local folder a remote is read through: `<cache dir>/ffsession/remotes/<name>`.
pub fn cache_dir(location: &Location) -> Result<PathBuf> {
    let dirs = directories::ProjectDirs::from("", "", "ffsession").ok_or_else(|| {
        UserError::with_hint(
            "cannot find the cache directory for the remote's local copy",
            "set HOME (or XDG_CACHE_HOME)",
        )
    })?;
    let name = location_name(location);
    // On Windows `%LOCALAPPDATA%`, when set, names the local application
    // data as it does for the stores (folders.rs): the known folder, unless
    // the environment moves it.
    #[cfg(windows)]
    let cache = match crate::folders::folders() {
        Some(f) if std::env::var_os("LOCALAPPDATA").is_some() => {
            f.data_local.join("ffsession").join("cache")
        }
        _ => dirs.cache_dir().to_path_buf(),
    };
    #[cfg(not(windows))]
    let cache = dirs.cache_dir().to_path_buf();
    Ok(cache.join("remotes").join(name))
}

/// A folder or file name for the remote at `location`: readable, and
/// unique (a digest of the whole location).
pub fn location_name(location: &Location) -> String {
    let key = location.key();
    let readable: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(60)
        .collect();
    let hash = ffsession::store::Digest::of(key.as_bytes()).to_hex();
    format!("{readable}-{}", &hash[..12])
}

/// The objects `check --read-data` found damaged on a remote, kept for the
/// next copy to replace (`damaged.json` in the remote's cache folder).
pub fn damaged_names(location: &Location) -> HashSet<String> {
    cache_dir(location)
        .ok()
        .and_then(|d| std::fs::read(d.join("damaged.json")).ok())
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// Remember (or, empty, forget) the damaged objects of a remote.
pub fn set_damaged_names(location: &Location, names: &HashSet<String>) -> Result<()> {
    let dir = cache_dir(location)?;
    let path = dir.join("damaged.json");
    if names.is_empty() {
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(e).with_context(|| path.display().to_string())
            }
            _ => return Ok(()),
        }
    }
    std::fs::create_dir_all(&dir).with_context(|| dir.display().to_string())?;
    let bytes = serde_json::to_vec(names)?;
    ffsession::fs_util::write_atomic(&path, |w: &mut dyn Write| w.write_all(&bytes))?;
    Ok(())
}

/// A progress bar on stderr (hidden unless stderr is a terminal).
pub fn bar(template: &str) -> ProgressBar {
    let bar = ProgressBar::new(0);
    if io::stderr().is_terminal() {
        bar.set_draw_target(ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
    } else {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar
}

/// Bring the remote `value` names into its local cache store and return
/// that store's folder: every read command and `restore` then work on it
/// unchanged. Says on stderr what it fetched.
pub fn synced_cache(global: &GlobalArgs, config: &Config, value: &str) -> Result<PathBuf> {
    let t = target(value, config)?;
    let dir = cache_dir(&t.location)?.join("store");
    // Offline, a local copy made before is used as it is, and said so.
    let offline = |e: &RemoteError| -> bool {
        e.is_offline() && dir.join(ffsession::store::CATALOG_FILE).is_file()
    };
    let backend = open_backend(&t.location, &options(&t)?).map_err(remote_error)?;
    let remote = match backend.list(ffsession::remote::Kind::Keys) {
        Err(e) if offline(&e) => {
            let _ = writeln!(
                io::stderr().lock(),
                "ffsession: warning: {e}; reading the local copy of {} made before",
                t.location
            );
            return Ok(dir);
        }
        _ => match kept::open(&t, backend)? {
            Ok(remote) => remote,
            Err(backend) => {
                let pw = password(global, &t, false, true)?;
                open_existing(backend, &pw, &t)?
            }
        },
    };
    sync_cache(global, &t, &remote)
}

/// Bring the local copy of the open remote `remote` (at `t`) up to date,
/// as [`synced_cache`] does; returns its folder.
pub fn sync_cache(global: &GlobalArgs, t: &Target, remote: &Remote) -> Result<PathBuf> {
    let dir = cache_dir(&t.location)?.join("store");
    if let Some(parent) = dir.parent() {
        create_private_dirs(parent)?;
    }
    let wait = global.lock_wait;
    let mut store = crate::lock_wait::with_lock_wait(&dir, wait, || Store::create_or_open(&dir))?;
    let bar = bar("fetching {bar:40} {pos}/{len} objects");
    let report = sync_from_remote(remote, &mut store, &mut |p| match p {
        SyncProgress::Planned { objects } => bar.inc_length(objects),
        SyncProgress::Fetched { .. } => {
            if bar.position() >= bar.length().unwrap_or(0) {
                bar.inc_length(1);
            }
            bar.inc(1)
        }
    });
    bar.finish_and_clear();
    let report = report.map_err(remote_error)?;
    // A remote whose records do not read is not an empty one.
    if report.snapshots_left_out > 0 && store.snapshots()?.is_empty() {
        if report.damaged.is_empty() {
            // Only reads that failed or hung: nothing is known damaged.
            let (object, why) = report
                .unreadable
                .first()
                .cloned()
                .unwrap_or_else(|| ("?".into(), "?".into()));
            return Err(UserError::with_hint(
                format!(
                    "{}: none of its snapshots reads: {} (the first, {object}: {why})",
                    t.location,
                    crate::fmt::count(
                        report.unreadable.len(),
                        "object does not read",
                        "objects do not read"
                    ),
                ),
                format!(
                    "the server failed those reads or did not answer them: run the command again; if it keeps failing, look at those files on the server ({} names the snapshots they hold up)",
                    crate::context::quoted_at(&t.label, &["check", "--read-data"])
                ),
            ));
        }
        let (object, why) = report
            .damaged
            .first()
            .cloned()
            .unwrap_or_else(|| ("?".into(), "?".into()));
        return Err(UserError::with_hint(
            format!(
                "{}: none of its snapshots reads: {} damaged or missing{} (the first, {object}: {why})",
                t.location,
                crate::fmt::count(report.damaged.len(), "object is", "objects are"),
                if report.unreadable.is_empty() {
                    String::new()
                } else {
                    format!(", {} unreadable", report.unreadable.len())
                },
            ),
            format!(
                "{} names each one; {} from a machine that has these snapshots sends them again",
                crate::context::quoted_at(&t.label, &["check", "--read-data"]),
                crate::context::quoted(&["copy", "--to", &t.label])
            ),
        ));
    }
    let mut err = io::stderr().lock();
    if report.snapshots_new > 0 {
        let hosts: BTreeMap<&str, usize> =
            report.hosts.values().fold(BTreeMap::new(), |mut m, h| {
                *m.entry(h.as_str()).or_default() += 1;
                m
            });
        let from: Vec<String> = hosts.iter().map(|(h, n)| format!("{n} from {h}")).collect();
        let _ = writeln!(
            err,
            "ffsession: fetched {} new snapshot{} from {} ({}, {})",
            report.snapshots_new,
            if report.snapshots_new == 1 { "" } else { "s" },
            t.location,
            from.join(", "),
            crate::fmt::size(report.bytes_fetched)
        );
    }
    for (object, why) in &report.damaged {
        let _ = writeln!(
            err,
            "{}",
            format_args!(
                "ffsession: warning: {}: {object}: {why} (the snapshots that need it are left out; {} says which)",
                t.location,
                crate::context::quoted_at(&t.label, &["check", "--read-data"])
            )
        );
    }
    for (object, why) in &report.unreadable {
        let _ = writeln!(
            err,
            "{}",
            format_args!(
                "ffsession: warning: {}: {object} does not read ({why}); the snapshots that need it are left out for now and fetched by the next command that reads the remote, the others are here (if it keeps failing, look at that file on the server; {} names the snapshots it holds up)",
                t.location,
                crate::context::quoted_at(&t.label, &["check", "--read-data"])
            )
        );
    }
    if !report.snapshots_missing.is_empty() {
        let ids: Vec<String> = report
            .snapshots_missing
            .iter()
            .map(|id| format!("#{id}"))
            .collect();
        let _ = writeln!(
            err,
            "{}",
            format_args!(
                "ffsession: warning: {}: {} this machine's copy holds ({}) {} no longer on the remote, and no prune removed {}: the remote was rolled back to an older copy, emptied or damaged; kept here ({} from the machine that took them sends them again)",
                t.location,
                crate::fmt::count(report.snapshots_missing.len(), "snapshot", "snapshots"),
                ids.join(", "),
                if ids.len() == 1 { "is" } else { "are" },
                if ids.len() == 1 { "it" } else { "them" },
                crate::context::quoted(&["copy", "--to", &t.label])
            )
        );
    }
    Ok(dir)
}

pub(crate) fn create_private_dirs(dir: &Path) -> Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir).with_context(|| dir.display().to_string())
}

/// The copies `watch` makes after each cycle to the remotes whose config
/// says `watch = true`. A remote that cannot be reached (offline, asleep)
/// is said once, then tried again quietly after each later cycle until a
/// copy works.
pub struct WatchCopies {
    /// (remote name, the last failure said, a copy is owed).
    pub remotes: Vec<(String, Option<String>, bool)>,
}

impl WatchCopies {
    /// The remotes `config` names for `watch`.
    pub fn new(config: &Config) -> WatchCopies {
        WatchCopies {
            remotes: config
                .remotes
                .iter()
                .filter(|(_, rc)| rc.watch)
                .map(|(name, _)| (name.clone(), None, true))
                .collect(),
        }
    }

    /// After a cycle (`stored`: it stored something): copy where a copy is
    /// owed. Never prompts, never fails the watch.
    pub fn after_cycle(
        &mut self,
        global: &GlobalArgs,
        config: &Config,
        store_dir: &Path,
        stored: bool,
    ) {
        for (name, said, owed) in &mut self.remotes {
            *owed |= stored;
            if !*owed {
                continue;
            }
            let result = Store::open_read_only(store_dir)
                .map_err(anyhow::Error::new)
                .and_then(|store| crate::commands::copy::copy(global, config, &store, name, false));
            let mut err = io::stderr().lock();
            match result {
                Ok(report) => {
                    *owed = false;
                    if said.take().is_some() {
                        let _ = writeln!(err, "ffsession: copy to {name} works again");
                    }
                    if report.snapshots_sent > 0 {
                        let _ = writeln!(
                            err,
                            "ffsession: copied {} to {name} ({})",
                            crate::fmt::count(
                                report.snapshots_sent as usize,
                                "snapshot",
                                "snapshots"
                            ),
                            crate::fmt::size(report.bytes_sent)
                        );
                    }
                }
                Err(e) => {
                    let what = format!("{e:#}");
                    if said.as_deref() != Some(what.as_str()) {
                        let _ = writeln!(
                            err,
                            "ffsession: warning: copy to {name} failed: {what}; trying again after the next cycles"
                        );
                        *said = Some(what);
                    }
                }
            }
        }
    }
}

/// TEST HOOK, for the fault tests only (debug builds):
/// `FFSESSION_TEST_REMOTE_KILL_AFTER_WRITES` (die after that many remote
/// objects written), `..._REMOTE_WRITE_DELAY_MS`,
/// `..._REMOTE_FIRST_WRITE_DELAY_MS` (the first object write only), and
/// `..._REMOTE_READ_TIMEOUT_MS` (the per-object read timeout,
/// `ffsession::remote::READ_TIMEOUT` otherwise). Unset, nothing changes.
#[cfg(debug_assertions)]
pub fn install_test_hook() {
    let kill = ffsession::test_setting!("REMOTE_KILL_AFTER_WRITES");
    let delay = ffsession::test_setting!("REMOTE_WRITE_DELAY_MS");
    if kill.is_some() || delay.is_some() {
        ffsession::remote::set_test_hook(kill, delay.unwrap_or(0));
    }
    if let Some(ms) = ffsession::test_setting!("REMOTE_FIRST_WRITE_DELAY_MS") {
        ffsession::remote::set_first_write_delay(ms);
    }
    if let Some(ms) = ffsession::test_setting!("REMOTE_READ_TIMEOUT_MS") {
        ffsession::remote::set_read_timeout(std::time::Duration::from_millis(ms));
    }
}
