//! `ffsession merge`: all windows of several sessions in one file.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use ffsession::tidy::{self, Editable};

use super::extract::{load_source, write_and_report};
use crate::cli::GlobalArgs;

/// Write one session file holding every window of every SOURCE, in order,
/// each tab as Firefox wrote it. Closed windows and the other session-wide
/// data are the first SOURCE's.
///
/// A SOURCE is a session file, a snapshot id, or `current`. With --dedupe, a
/// tab whose URL an earlier tab already has is left out. OUT is a mozlz4 file
/// Firefox loads, written atomically.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession merge current 42 -o both.jsonlz4 --dedupe
  ffsession merge laptop.jsonlz4 desktop.jsonlz4 -o all.jsonlz4")]
pub struct MergeArgs {
    /// Session files, snapshot ids, or `current` (`./FILE`, `snapshot:N`,
    /// `profile:current` where a file has such a name)
    #[arg(required = true, num_args = 1..)]
    pub sources: Vec<String>,

    /// Output file (mozlz4)
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: PathBuf,

    /// Leave out tabs whose URL an earlier tab has
    #[arg(long)]
    pub dedupe: bool,

    /// Print what was written as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(global: &GlobalArgs, args: MergeArgs) -> Result<()> {
    let data = args
        .sources
        .iter()
        .map(|s| load_source(global, s))
        .collect::<Result<Vec<_>>>()?;
    let sessions = data
        .iter()
        .map(Editable::new)
        .collect::<Result<Vec<_>, _>>()?;
    let result = tidy::merge(&sessions, args.dedupe, Some(super::now_ms()))?;
    let inputs: Vec<&std::path::Path> = data.iter().map(|d| d.path()).collect();
    write_and_report(&args.output, &inputs, &result, args.json)
}
