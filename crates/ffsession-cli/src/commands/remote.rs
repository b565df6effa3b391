//! `ffsession remote`: what this machine keeps of the remotes it opened.

use std::io::{self, Write};

use anyhow::Result;
use clap::{Args, ValueEnum};

use crate::cli::GlobalArgs;
use crate::error::UserError;
use crate::fmt;
use crate::remote;

/// The keys this machine keeps of remote stores.
///
/// After the password opened a remote once, ffsession keeps the remote's
/// key on this machine (in `remote-keys/` in its config folder, readable by
/// you only), so the next command opens it at once, without the password
/// and its second of key stretching: as a private SSH key without a
/// passphrase, whoever can read your files can read and write that remote
/// with it. `keys` lists them; `forget` removes the key of LOCATION (or
/// every one with --all), and the next command asks the password again. To
/// never keep one, set `keep_key = false` in the remote's [remotes.NAME]
/// table.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession remote keys                            the remotes this machine opens without a password
  ffsession remote forget sftp://me@nas.local/ffsession
  ffsession remote forget nas                      the remote [remotes.nas] of the config
  ffsession remote forget --all")]
pub struct RemoteArgs {
    /// What to do
    #[arg(value_enum)]
    pub action: Action,

    /// The remote: a location or a [remotes.NAME] of the config file
    #[arg(value_name = "LOCATION|NAME", required_if_eq_all([("action", "forget"), ("all", "false")]))]
    pub location: Option<String>,

    /// With `forget`: every key this machine keeps
    #[arg(long, conflicts_with = "location")]
    pub all: bool,
}

/// What `remote` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Action {
    /// List the remotes whose key this machine keeps
    Keys,
    /// Remove the key kept for a remote (the password opens it again)
    Forget,
}

pub fn run(global: &GlobalArgs, args: RemoteArgs) -> Result<()> {
    let mut out = io::stdout().lock();
    match args.action {
        Action::Keys => {
            let kept = remote::kept::all()?;
            if kept.is_empty() {
                writeln!(
                    out,
                    "no remote's key is kept here: each remote command asks the password"
                )?;
            }
            for (path, location) in kept {
                writeln!(out, "{}  ({})", fmt::escape(&location), fmt::path(&path))?;
            }
        }
        Action::Forget if args.all => {
            let kept = remote::kept::all()?;
            for (path, location) in &kept {
                std::fs::remove_file(path).map_err(|e| {
                    anyhow::Error::new(e)
                        .context(format!("{}: cannot remove the kept key", path.display()))
                })?;
                writeln!(out, "forgot the key of {}", fmt::escape(location))?;
            }
            if kept.is_empty() {
                writeln!(out, "no remote's key was kept here")?;
            }
        }
        Action::Forget => {
            let config = global.config()?;
            let value = args.location.unwrap_or_default();
            let t = remote::target(&value, &config)?;
            if remote::kept::forget(&t.location)? {
                writeln!(
                    out,
                    "forgot the key of {}: the next command that opens it asks the password",
                    t.location
                )?;
            } else {
                return Err(UserError::with_hint(
                    format!("no key of {} is kept on this machine", t.location),
                    format!(
                        "{} lists the remotes whose key is kept",
                        crate::context::quoted(&["remote", "keys"])
                    ),
                ));
            }
        }
    }
    out.flush()?;
    Ok(())
}
