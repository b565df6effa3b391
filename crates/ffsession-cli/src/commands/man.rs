//! `ffsession man`: the manual page, as roff, on stdout.

use std::io::{self, Write};

use anyhow::Result;
use clap::Args;

use crate::error::UserError;

/// Print the manual page (roff, for `man`) on stdout: ffsession(1), or, for
/// a COMMAND, ffsession-COMMAND(1).
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession man | man -l -                      read it now

Install it where man looks (for your user; the folder first, as a new home lacks it):
  mkdir -p ~/.local/share/man/man1
  ffsession man > ~/.local/share/man/man1/ffsession.1
  ffsession man backup > ~/.local/share/man/man1/ffsession-backup.1")]
pub struct ManArgs {
    /// A command, for its own page
    #[arg(value_name = "COMMAND")]
    pub command: Option<String>,
}

pub fn run(args: ManArgs) -> Result<()> {
    let root = crate::cli::whole_command();
    let page = match &args.command {
        // Without clap's `help` command, which has no page of its own.
        None => root.disable_help_subcommand(true),
        Some(name) => {
            let version = root.get_version().unwrap_or_default().to_owned();
            let sub = root.find_subcommand(name).cloned().ok_or_else(|| {
                UserError::usage(
                    format!("no command `{name}`"),
                    "`ffsession --help` lists the commands",
                )
            })?;
            sub.name(format!("ffsession-{name}")).version(version)
        }
    };
    let mut roff = Vec::new();
    clap_mangen::Man::new(page).render(&mut roff)?;
    let mut out = io::stdout().lock();
    out.write_all(&roff)?;
    out.flush()?;
    Ok(())
}
