//! `ffsession list`: the snapshots in the backup store, newest first.

use std::io::{self, Write};

use anyhow::Result;
use clap::Args;

use crate::cli::GlobalArgs;
use crate::fmt;

/// List the snapshots in the profile's backup store, newest first: id, when it
/// was taken, the source file, windows and tabs, status, and the bytes it added
/// to the store.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

pub fn run(global: &GlobalArgs, args: ListArgs) -> Result<()> {
    let config = global.config()?;
    let store = super::open_existing_store(&global.chosen_store_dir(&config)?, false)?;
    let snapshots = store.snapshots()?;
    if args.json {
        return super::print_json(&snapshots);
    }
    let mut out = io::stdout().lock();
    if snapshots.is_empty() {
        writeln!(
            out,
            "no snapshots yet in {} (take one with `ffsession backup`)",
            fmt::path(store.dir())
        )?;
    }
    for s in &snapshots {
        writeln!(out, "{}", fmt::snapshot_line(s))?;
    }
    out.flush()?;
    Ok(())
}
