//! The configuration file, `config.toml` in ffsession's config folder
//! (`$XDG_CONFIG_HOME/ffsession/` on Linux, the platform's equivalent elsewhere),
//! or the file `--config` / `FFSESSION_CONFIG` names. Every setting is optional;
//! command-line flags win over the file, the file over built-in defaults.
//!
//! ```toml
//! # Where backups go (default: <data dir>/ffsession/<profile name>)
//! store = "/backups/firefox"
//!
//! [prune]            # defaults for `ffsession prune` and `backup --prune`
//! keep_last = 10
//! keep_hourly = 24
//! keep_daily = 7
//! keep_weekly = 4
//! keep_monthly = 12
//! keep_yearly = 3
//!
//! [watch]
//! interval = "5m"    # at most one snapshot per interval while Firefox runs
//! notify = true      # desktop notifications of alarms (false: the log only)
//! ```

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::error::UserError;
use ffsession::retention::RetentionPolicy;
use serde::Deserialize;

/// The parsed configuration file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The backup store folder.
    pub store: Option<PathBuf>,
    /// Retention defaults.
    #[serde(default)]
    pub prune: RetentionPolicy,
    /// `[watch]` settings.
    #[serde(default)]
    pub watch: WatchConfig,
    /// How this machine's snapshots are tagged on remotes (default: its
    /// host name).
    pub host: Option<String>,
    /// `[remotes.NAME]`: remote stores `copy --to NAME` and `--store NAME`
    /// name (see `remote.rs`).
    #[serde(default)]
    pub remotes: std::collections::BTreeMap<String, crate::remote::RemoteConfig>,
}

/// `[watch]` settings.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WatchConfig {
    /// Minimum time between two snapshots, e.g. "5m", "90s", "1h".
    pub interval: Option<String>,
    /// Desktop notifications of alarms (default: on); `false` leaves them
    /// to the log (stderr) and `ffsession status`.
    pub notify: Option<bool>,
}

impl Config {
    /// Read `path`; a missing file is an empty configuration unless it was
    /// named explicitly.
    pub fn load(path: &Path, explicit: bool) -> Result<Config> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {
                return Ok(Config::default())
            }
            Err(e) => {
                return Err(e).with_context(|| {
                    format!("{}: cannot read the configuration file", path.display())
                })
            }
        };
        toml::from_str(&text).map_err(|e| invalid(path, &text, &e))
    }
}

/// A configuration file toml or serde refused, on one line: the file, the
/// line, what is wrong (an unknown key is named, with the keys allowed
/// there), and a hint.
fn invalid(path: &Path, text: &str, e: &toml::de::Error) -> anyhow::Error {
    let line = e
        .span()
        .map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1);
    let at = line.map(|l| format!(" line {l}:")).unwrap_or_default();
    let message = e.message().trim().replace('\n', " ");
    let hint = if message.starts_with("unknown field") {
        "check its spelling against the keys expected there: a setting ffsession does not know is refused, not ignored"
    } else {
        "the file is TOML: `key = value` lines, text in double quotes"
    };
    UserError::with_hint(
        format!("{}:{at} invalid configuration: {message}", path.display()),
        hint,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_prune_settings_keep_the_other_defaults() {
        let c: Config = toml::from_str("store = \"/b\"\n[prune]\nkeep_daily = 30\n").unwrap();
        assert_eq!(c.store.as_deref(), Some(Path::new("/b")));
        assert_eq!(c.prune.keep_daily, 30);
        assert_eq!(c.prune.keep_last, RetentionPolicy::DEFAULT.keep_last);
    }

    #[test]
    fn unknown_keys_and_missing_explicit_files_are_errors() {
        assert!(toml::from_str::<Config>("stor = 1").is_err());
        assert!(toml::from_str::<Config>("[prune]\nkeep_lats = 3\n").is_err());
        assert!(toml::from_str::<Config>("[watch]\nintervall = \"5m\"\n").is_err());
        let dir = tempfile::tempdir().unwrap();
        assert!(Config::load(&dir.path().join("none.toml"), true).is_err());
        assert!(Config::load(&dir.path().join("none.toml"), false)
            .unwrap()
            .store
            .is_none());
    }
}
