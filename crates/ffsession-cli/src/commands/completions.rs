//! `ffsession completions`: a shell completion script on stdout.

use std::io::{self, Write};

use anyhow::Result;
use clap::Args;
use clap_complete::Shell;

/// Print a completion script for SHELL, made from ffsession's own command
/// line: commands, options and their values complete with Tab.
#[derive(Debug, Args)]
#[command(
    after_help = "Install it where the shell looks (the folder first, as a new home lacks it):
  mkdir -p ~/.local/share/bash-completion/completions
  ffsession completions bash > ~/.local/share/bash-completion/completions/ffsession
  mkdir -p ~/.zfunc
  ffsession completions zsh > ~/.zfunc/_ffsession      (with fpath+=~/.zfunc before compinit)
  mkdir -p ~/.config/fish/completions
  ffsession completions fish > ~/.config/fish/completions/ffsession.fish
  ffsession completions powershell >> $PROFILE
  ffsession completions elvish >> ~/.config/elvish/rc.elv"
)]
pub struct CompletionsArgs {
    /// The shell
    #[arg(value_name = "SHELL")]
    pub shell: Shell,
}

pub fn run(args: CompletionsArgs) -> Result<()> {
    let mut cmd = crate::cli::whole_command();
    // Made in memory, then written: clap_complete panics on a write error,
    // and a closed pipe (`| head`) is a quiet end, not a panic.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "ffsession", &mut script);
    let mut out = io::stdout().lock();
    out.write_all(&script)?;
    out.flush()?;
    Ok(())
}
