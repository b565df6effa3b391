//! One module per subcommand, each with its clap `Args` struct and a `run`
//! function; shared plumbing (finding the profile, reading the session to show)
//! lives here.

pub mod backup;
pub mod check;
pub mod completions;
pub mod compress;
pub mod copy;
pub mod decompress;
pub mod diff;
pub mod extract;
pub mod history;
pub mod info;
pub mod list;
pub mod man;
pub mod merge;
pub mod naming;
mod output;
pub mod profiles;
pub mod prune;
pub mod reindex;
pub mod remote;
mod remote_ops;
pub mod rescue;
pub mod restore;
mod restore_whose;
pub mod search;
pub mod service;
pub mod stats;
pub mod status;
pub mod stores;
pub mod tabs;
pub mod tidy;
pub mod ui;
pub mod watch;

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use ffsession::platform::{FirefoxRoot, Platform};
use ffsession::profile::{self, Profile};
use ffsession::store::owner;
use ffsession::{sources, SessionData};

use crate::cli::{Cli, Command, GlobalArgs, Lazy};
use crate::config::Config;
use crate::error::UserError;

/// Run the chosen subcommand.
pub fn run(cli: Cli) -> Result<()> {
    let g = &cli.global;
    crate::ui::set_quiet(g.quiet);
    match cli.command {
        Command::Profiles(Lazy(args)) => profiles::run(g, args),
        Command::Backup(Lazy(args)) => backup::run(g, args),
        Command::Copy(Lazy(args)) => copy::run(g, args),
        Command::Remote(Lazy(args)) => remote::run(g, args),
        Command::Check(Lazy(args)) => check::run(g, args),
        Command::List(Lazy(args)) => list::run(g, args),
        Command::Prune(Lazy(args)) => prune::run(g, args),
        Command::Restore(Lazy(args)) => restore::run(g, args),
        Command::Watch(Lazy(args)) => watch::run(g, args),
        Command::Status(Lazy(args)) => status::run(g, args),
        Command::Service(Lazy(args)) => service::run(g, args),
        Command::Info(Lazy(args)) => info::run(g, args),
        Command::Tabs(Lazy(args)) => tabs::run(g, args),
        Command::Diff(Lazy(args)) => diff::run(g, args),
        Command::Search(Lazy(args)) => search::run(g, args),
        Command::Stores(Lazy(args)) => stores::run(g, args),
        Command::History(Lazy(args)) => history::run(g, args),
        Command::Reindex(Lazy(args)) => reindex::run(g, args),
        Command::Rescue(Lazy(args)) => rescue::run(g, args),
        Command::Tidy(Lazy(args)) => tidy::run(g, args),
        Command::Extract(Lazy(args)) => extract::run(g, args),
        Command::Merge(Lazy(args)) => merge::run(g, args),
        Command::Stats(Lazy(args)) => stats::run(g, args),
        Command::Decompress(Lazy(args)) => decompress::run(args),
        Command::Compress(Lazy(args)) => compress::run(args),
        Command::Completions(Lazy(args)) => completions::run(args),
        Command::Man(Lazy(args)) => man::run(args),
        Command::Ui(Lazy(args)) => ui::run(g, args),
    }
}

/// What `--browser` chose: a browser of the family, and maybe one of
/// Firefox's editions (which share Firefox's folders).
struct BrowserChoice {
    browser: &'static ffsession::platform::Browser,
    edition: Option<&'static str>,
}

/// `--browser NAME`: a browser's name or a Firefox edition's, in any case,
/// with or without `firefox-` before the edition.
fn browser_choice(name: &str) -> Result<BrowserChoice> {
    use ffsession::platform::{browser, BROWSERS};
    let key = name.trim().to_lowercase().replace([' ', '_'], "-");
    let edition = match key.strip_prefix("firefox-").unwrap_or(&key) {
        "developer-edition" | "devedition" | "dev-edition" | "aurora" => Some("Developer Edition"),
        "nightly" => Some("Nightly"),
        "beta" => Some("Beta"),
        "esr" => Some("ESR"),
        _ => None,
    };
    if edition.is_some() {
        return Ok(BrowserChoice {
            browser: &BROWSERS[0],
            edition,
        });
    }
    match browser(&key) {
        Some(b) => Ok(BrowserChoice {
            browser: b,
            edition: None,
        }),
        None => Err(UserError::with_hint(
            format!("--browser {name:?}: not a browser ffsession knows"),
            format!(
                "name one of {}, or developer-edition, nightly, beta, esr; for another, pass --firefox-dir DIR (the folder holding its profiles.ini)",
                BROWSERS
                    .iter()
                    .map(|b| b.name.to_lowercase())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

impl GlobalArgs {
    /// The folders holding profiles.ini: `--firefox-dir` or
    /// `$FFSESSION_FIREFOX_DIR` alone, or every place the browsers of the
    /// Firefox family keep profiles (only `--browser`'s when given),
    /// Firefox's first and, for each, the one it uses itself first (on
    /// Linux the XDG folder or, when the legacy one exists or
    /// `MOZ_LEGACY_HOME=1`, the legacy one; then the other, the Snap's and
    /// the Flatpak's).
    pub fn firefox_roots(&self) -> Result<Vec<FirefoxRoot>> {
        let choice = self.browser.as_deref().map(browser_choice).transpose()?;
        if let Some(dir) = &self.firefox_dir {
            return Ok(vec![FirefoxRoot {
                browser: choice.map_or("Firefox", |c| c.browser.name),
                package: "",
                path: dir.clone(),
            }]);
        }
        let folders = crate::folders::folders().ok_or_else(|| {
            UserError::with_hint(
                "cannot find the home directory",
                "set HOME, or pass --firefox-dir DIR or --profile PATH",
            )
        })?;
        let forced = std::env::var_os("MOZ_LEGACY_HOME").is_some_and(|v| v == "1");
        Ok(match choice {
            Some(c) => c.browser.roots(Platform::CURRENT, &folders, forced),
            None => Platform::CURRENT.firefox_roots(&folders, forced),
        })
    }

    /// The paths of [`GlobalArgs::firefox_roots`].
    pub fn firefox_root_paths(&self) -> Result<Vec<PathBuf>> {
        Ok(self.firefox_roots()?.into_iter().map(|r| r.path).collect())
    }

    /// Whether `--browser` keeps `profile` (an edition keeps only the
    /// profiles Firefox made for it).
    fn keeps(&self, profile: &Profile) -> bool {
        let edition = self
            .browser
            .as_deref()
            .and_then(|b| browser_choice(b).ok())
            .and_then(|c| c.edition);
        edition.is_none_or(|e| profile::edition(&profile.name) == Some(e))
    }

    /// Every profile of [`GlobalArgs::firefox_roots`] `--browser` keeps,
    /// each with the index of its root; none is
    /// [`profile::ProfileError::NoProfileFound`].
    pub fn listed_profiles(&self) -> Result<Vec<(usize, Profile)>> {
        let roots = self.firefox_root_paths()?;
        let all: Vec<(usize, Profile)> = profile::list_roots(&roots)?
            .into_iter()
            .filter(|(_, p)| self.keeps(p))
            .collect();
        if all.is_empty() {
            return Err(profile::ProfileError::NoProfileFound { searched: roots }.into());
        }
        Ok(all)
    }

    /// The profile `--profile` names, or the default profile.
    pub fn profile(&self) -> Result<Profile> {
        let roots = self.firefox_root_paths()?;
        Ok(profile::find_in(&roots, self.profile.as_deref(), &|p| {
            self.keeps(p)
        })?)
    }
}

impl GlobalArgs {
    /// The configuration file: `--config`, or the platform's config folder.
    pub fn config(&self) -> Result<Config> {
        match &self.config {
            Some(path) => Config::load(path, true),
            None => match crate::folders::folders() {
                Some(folders) => Config::load(&Platform::CURRENT.config_file(&folders), false),
                None => Ok(Config::default()),
            },
        }
    }

    /// The backup store of `profile`: `--store`, the config file's `store`, or
    /// `<data dir>/ffsession/<profile name>`.
    pub fn store_dir(&self, config: &Config, profile: &Profile) -> Result<PathBuf> {
        match self.named_store(config) {
            Some(dir) => Ok(dir),
            None => self.data_store_dir(profile),
        }
    }

    /// The store `--store` or the config file's `store` names, as given (a
    /// folder, a remote's location or name); `None`: the profile's own.
    pub fn named_store(&self, config: &Config) -> Option<PathBuf> {
        self.store.clone().or_else(|| config.store.clone())
    }

    /// `<data dir>/ffsession/<profile name>`: the profile's own store when
    /// neither `--store` nor the config names one. When that store backs up
    /// another profile folder of the same name that is still there, the
    /// profile's store is `<profile name>-<8 hex digits of its path>`.
    pub fn data_store_dir(&self, profile: &Profile) -> Result<PathBuf> {
        let name: String = profile
            .name
            .chars()
            .map(|c| {
                if c.is_alphanumeric() || "-_.".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let by_name = self.stores_root()?.join(&name);
        Ok(match owner::owner(&by_name, &profile.path) {
            owner::Owner::Other(other) => {
                let apart = owner::apart(&by_name, &profile.path);
                if !apart.exists() {
                    crate::ui::note(format_args!(
                        "{} backs up {}, another profile named \"{}\"; this profile's backups go to {}",
                        crate::fmt::path(&by_name),
                        crate::fmt::path(&other),
                        crate::fmt::escape(&profile.name),
                        crate::fmt::path(&apart)
                    ));
                }
                apart
            }
            owner::Owner::Unbound | owner::Owner::This | owner::Owner::Moved(_) => by_name,
        })
    }
}

impl GlobalArgs {
    /// The store a command works on when it needs no Firefox profile of its
    /// own (`list`, `search`, `prune`, `restore --profile PATH`, ...): `--store`
    /// or the config file's `store` as they are, so a store copied to a new
    /// machine works without Firefox; else the chosen profile's store.
    pub fn chosen_store_dir(&self, config: &Config) -> Result<PathBuf> {
        if let Some(dir) = self.named_store(config) {
            // A remote is read through a local copy, brought up to date now.
            if crate::remote::is_remote(&dir, config) {
                return crate::remote::synced_cache(self, config, &dir.to_string_lossy());
            }
            return Ok(dir);
        }
        let profile = self.profile().map_err(|e| {
            let hint = format!(
                "pass --store DIR to use a store without a Firefox profile; {} lists the stores in the data directory",
                self.quoted(&["stores"])
            );
            UserError::with_hint(format!("{e:#}"), hint)
        })?;
        self.store_dir(config, &profile)
    }

    /// The remote store `--store` or the config's `store` names, if it is
    /// one (a URL, a config remote's name, a folder holding a remote store).
    pub fn remote_store(&self, config: &Config) -> Option<String> {
        let value = self.named_store(config)?;
        crate::remote::is_remote(&value, config).then(|| value.to_string_lossy().into_owned())
    }

    /// The data directory's folder of stores (`<data dir>/ffsession`).
    pub fn stores_root(&self) -> Result<PathBuf> {
        let folders = crate::folders::folders().ok_or_else(|| {
            UserError::with_hint(
                "cannot find the data directory for the backup stores",
                "pass --store DIR, or set `store` in the config file",
            )
        })?;
        Ok(Platform::CURRENT.stores_root(&folders))
    }
}

/// A store path that names something other than a folder (a file given to
/// --store by mistake) is a clear error, not SQLite's "Not a directory".
pub fn check_store_path(dir: &Path) -> Result<()> {
    match std::fs::metadata(dir) {
        Ok(meta) if !meta.is_dir() => Err(UserError::with_hint(
            format!("{}: is a file, not a backup store folder", dir.display()),
            format!(
                "--store (or `store` in the config file) names the store's folder; {} lists the stores in the data directory",
                crate::context::quoted(&["stores"])
            ),
        )),
        _ => Ok(()),
    }
}

/// The error of every command that needs a store when its folder does not
/// exist, or is an empty folder (a new store, which the first backup makes):
/// no backup was taken yet (exit code 1).
pub fn no_backups_yet(dir: &Path) -> anyhow::Error {
    let what = if dir.exists() {
        "is an empty folder"
    } else {
        "does not exist"
    };
    UserError::with_hint(
        format!("no backups yet: {} {what}", dir.display()),
        format!(
            "take one with {}, or pass --store DIR",
            crate::context::quoted(&["backup"])
        ),
    )
}

/// True when `dir` is not there, or is a folder holding nothing: a store
/// no backup has been taken into yet (`backup` makes a new store in it).
pub fn no_store_yet(dir: &Path) -> bool {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => entries.next().is_none(),
        Err(e) => e.kind() == io::ErrorKind::NotFound,
    }
}

/// Open an existing store (read-only or for writing); a store that does not
/// exist yet is a clear "no backups yet".
pub fn open_existing_store(dir: &Path, writable: bool) -> Result<ffsession::store::Store> {
    check_store_path(dir)?;
    if no_store_yet(dir) {
        return Err(no_backups_yet(dir));
    }
    Ok(if writable {
        ffsession::store::Store::open(dir)?
    } else {
        ffsession::store::Store::open_read_only(dir)?
    })
}

/// Open an existing store for writing, waiting up to `--lock-wait` while
/// another ffsession holds it.
pub fn open_existing_store_waiting(
    global: &GlobalArgs,
    dir: &Path,
) -> Result<ffsession::store::Store> {
    check_store_path(dir)?;
    if no_store_yet(dir) {
        return open_existing_store(dir, true);
    }
    let mut store = crate::lock_wait::with_lock_wait(dir, global.lock_wait, || {
        ffsession::store::Store::open(dir)
    })?;
    say_index_note(global, &mut store);
    Ok(store)
}

/// Open (creating it if needed) the store in `dir` for writing, waiting up to
/// `--lock-wait` while another ffsession holds it.
pub fn create_store_waiting(global: &GlobalArgs, dir: &Path) -> Result<ffsession::store::Store> {
    check_store_path(dir)?;
    let mut store = crate::lock_wait::with_lock_wait(dir, global.lock_wait, || {
        ffsession::store::Store::create_or_open(dir)
    })?;
    say_index_note(global, &mut store);
    Ok(store)
}

/// What a writer found about the store's tab index (damaged and built
/// again, or not updated), as a warning, once: the index is derived data,
/// so nothing else fails for it. Said after opening a store for writing
/// and after a backup.
pub fn say_index_note(global: &GlobalArgs, store: &mut ffsession::store::Store) {
    if let Some(note) = store.take_index_note() {
        let hint = note
            .hint
            .map(|h| format!("; {}", global.word(&h)))
            .unwrap_or_default();
        crate::ui::warning(format_args!(
            "{}: {}{hint}",
            crate::fmt::path(&store.dir().join(ffsession::store::INDEX_FILE)),
            note.what
        ));
    }
}

/// The profile's store, read-only, with its snapshots (newest first); an empty
/// or missing store is a clear error.
pub fn open_store_with_snapshots(
    global: &GlobalArgs,
) -> Result<(ffsession::store::Store, Vec<ffsession::store::SnapshotInfo>)> {
    let config = global.config()?;
    let store = open_existing_store(&global.chosen_store_dir(&config)?, false)?;
    let snapshots = store.snapshots()?;
    if snapshots.is_empty() {
        if let Some(remote) = global.remote_store(&config) {
            return Err(UserError::with_hint(
                format!("no snapshots yet on {remote}"),
                format!(
                    "send this machine's with {}",
                    global.quoted(&["copy", "--to", &remote])
                ),
            ));
        }
        return Err(UserError::with_hint(
            format!("no snapshots yet in {}", store.dir().display()),
            format!("take one with {}", global.quoted(&["backup"])),
        ));
    }
    Ok((store, snapshots))
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> u64 {
    ffsession::store::unix_ms(std::time::SystemTime::now()).unwrap_or(0)
}

/// Read `file`, or, when none is given, the newest valid session file of the
/// chosen profile; say on stderr which file that was and what was skipped.
pub fn load_session(global: &GlobalArgs, file: Option<&Path>) -> Result<SessionData> {
    if let Some(file) = file {
        return Ok(SessionData::read(file)?);
    }
    let profile = global.profile()?;
    let newest = sources::newest(&profile.path)?;
    // A damaged file skipped is worth a warning even under --quiet.
    for (path, why) in &newest.skipped {
        crate::ui::warning(format_args!("skipped {}: {why}", path.display()));
    }
    crate::ui::note(format_args!(
        "using {} (newest of {} session file{} in profile \"{}\")",
        newest.data.path().display(),
        newest.candidates,
        if newest.candidates == 1 { "" } else { "s" },
        profile.name
    ));
    Ok(newest.data)
}

/// Write JSON to stdout followed by a newline.
pub fn print_json(value: &impl serde::Serialize) -> Result<()> {
    let mut out = io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value).context("writing JSON to stdout")?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}
