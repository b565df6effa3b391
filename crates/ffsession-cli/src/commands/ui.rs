//! `ffsession ui`: a local page to see the sessions and pick what to bring
//! back (the server is in `crate::web`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;

use crate::cli::GlobalArgs;
use crate::config::Config;

/// Serve a local page showing the store's sessions, and open it in the
/// default browser: a timeline of windows and tabs over time, each
/// snapshot's windows, tab groups and tabs, closed and archived tabs, the
/// difference between two snapshots, a search over every tab ever backed
/// up, and picking tabs and windows to open now or add at the browser's
/// next start, or a snapshot to restore or rescue.
///
/// The page reads the store as `list`, `tabs`, `diff` and `search` do, and
/// changes things only by running those commands (`restore`, `extract`,
/// `merge`, `rescue`): before each action it shows what will happen and the
/// command line that does the same. The server listens on 127.0.0.1 only,
/// and answers only the address it prints, which holds a random secret;
/// the browser is given a file in the page's private folder that leads
/// there, so the secret is on no command line. A remote store's password
/// is asked once, at the start, and given to the commands the page runs in
/// their environment (FFSESSION_PASSWORD), never on their command line.
/// Ctrl-C stops it (SIGTERM and SIGHUP too), removing the private folder.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession ui                         serve the page and open it in the default browser
  ffsession ui --no-open --port 8765   print the address instead
  ffsession ui --snapshot 17           open the page at snapshot 17 (what an alarm's notification opens)
  ffsession --store sftp://host/ffsession ui   a remote store, through its local copy")]
pub struct UiArgs {
    /// The port on 127.0.0.1 to listen on (0: any free port)
    #[arg(long, default_value_t = 0, value_name = "PORT")]
    pub port: u16,

    /// Print the page's address, do not open a browser
    #[arg(long)]
    pub no_open: bool,

    /// Open the page at this snapshot (its windows and tabs, with restore
    /// and rescue), not at the timeline
    #[arg(long, value_name = "ID")]
    pub snapshot: Option<i64>,

    /// The browser program that opens picked tabs ("open now"), with its
    /// remote command line, as `firefox --profile DIR --new-tab URL`
    /// [default: the --browser's program (firefox, librewolf, ...) on PATH]
    #[arg(long, value_name = "PROGRAM", env = "FFSESSION_BROWSER_BIN")]
    pub browser_bin: Option<PathBuf>,
}

pub fn run(global: &GlobalArgs, args: UiArgs) -> Result<()> {
    let config = global.config()?;
    // A remote is brought up to date now, and read through its local copy;
    // its password is asked then, once (unless a variable or a file gives
    // it). The commands the page runs get it in their environment, never
    // on a command line or in the page. (Offline, the copy made before is
    // read with no password, as those commands read it.)
    let store_dir = global.chosen_store_dir(&config)?;
    let remote = global
        .remote_store(&config)
        .and_then(|value| crate::remote::target(&value, &config).ok());
    let password = remote
        .as_ref()
        .and_then(|target| crate::remote::password(global, target, false, false).ok());
    // The remote's address, not the folder of its local copy.
    let store_label = match &remote {
        Some(t) if t.label == t.location.to_string() => t.label.clone(),
        Some(t) => format!("{} ({})", t.label, t.location),
        None => crate::fmt::path(&store_dir).into_owned(),
    };
    super::open_existing_store(&store_dir, false)?;
    let profile_dir = global.profile().ok().map(|p| p.path);
    crate::web::serve(crate::web::Options {
        store_dir,
        store_label,
        port: args.port,
        open: !args.no_open,
        start: args.snapshot.map(|id| format!("snapshot/{id}")),
        globals: page_globals(global, &config, profile_dir.as_deref())?,
        browser_bin: browser_bin(global, args.browser_bin),
        profile_dir,
        password,
    })
}

/// The global options given, as they would be written again for the
/// commands the page runs in another folder (its private one): a path
/// given relative to this folder made absolute, the profile by its folder.
fn page_globals(
    g: &GlobalArgs,
    config: &Config,
    profile_dir: Option<&Path>,
) -> Result<Vec<OsString>> {
    let absolute = |p: &Path| -> Result<OsString> {
        Ok(std::path::absolute(p)
            .with_context(|| format!("finding the folder of {}", p.display()))?
            .into_os_string())
    };
    let mut out: Vec<OsString> = Vec::new();
    let mut put = |name: &str, value: Option<OsString>| {
        if let Some(v) = value {
            out.push(name.into());
            out.push(v);
        }
    };
    // A profile named here by its name may be a folder of this one
    // (`--profile work`): its folder is what the commands must use.
    let profile = match (profile_dir, &g.profile) {
        (Some(dir), Some(_)) => Some(absolute(dir)?),
        (None, Some(spec)) if spec.contains(['/', std::path::MAIN_SEPARATOR]) => {
            Some(absolute(Path::new(spec))?)
        }
        (_, spec) => spec.clone().map(Into::into),
    };
    put("--profile", profile);
    put("--browser", g.browser.clone().map(Into::into));
    put(
        "--firefox-dir",
        g.firefox_dir.as_deref().map(absolute).transpose()?,
    );
    // A remote (a URL, a config remote's name) as it is; a folder absolute.
    let store = match &g.store {
        Some(s) if crate::remote::is_remote(s, config) && !s.is_dir() => Some(s.clone().into()),
        Some(s) => Some(absolute(s)?),
        None => None,
    };
    put("--store", store);
    put(
        "--password-file",
        g.password_file.as_deref().map(absolute).transpose()?,
    );
    put("--config", g.config.as_deref().map(absolute).transpose()?);
    Ok(out)
}

/// The browser program: --browser-bin, else the chosen browser's on PATH.
fn browser_bin(g: &GlobalArgs, given: Option<PathBuf>) -> PathBuf {
    if let Some(bin) = given {
        return bin;
    }
    let name = g
        .browser
        .as_deref()
        .and_then(|b| ffsession::platform::browser(&b.trim().to_lowercase()))
        .map_or_else(|| "firefox".to_owned(), |b| b.name.to_lowercase());
    PathBuf::from(name)
}
