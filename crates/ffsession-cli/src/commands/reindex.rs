//! `ffsession reindex`: rebuild the tab index from the stored snapshots.

use std::io::{self, IsTerminal, Write};

use anyhow::Result;
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cli::GlobalArgs;
use crate::fmt;

/// Rebuild the tab index that `search` and `history` use, from every verified
/// snapshot in the store (each one read and checked again).
///
/// `backup` indexes the tabs of every snapshot it takes; run this once after
/// upgrading from an ffsession without a tab index, so the snapshots taken
/// before are searchable too. The rebuild is one transaction: interrupted,
/// it leaves the index as it was. Shows a progress bar on stderr when stderr
/// is a terminal.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession reindex                 index every snapshot's tabs again
  ffsession reindex --json          the counts as JSON")]
pub struct ReindexArgs {
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

pub fn run(global: &GlobalArgs, args: ReindexArgs) -> Result<()> {
    let config = global.config()?;
    let mut store = super::open_existing_store_waiting(global, &global.chosen_store_dir(&config)?)?;
    let bar = ProgressBar::new(0);
    if io::stderr().is_terminal() {
        bar.set_draw_target(ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("indexing {bar:40} {pos}/{len} snapshots ({eta} left)")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
    } else {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    let report = store.reindex_tabs(|done, total| {
        bar.set_length(total);
        bar.set_position(done);
    });
    bar.finish_and_clear();
    let report = report?;
    if args.json {
        return super::print_json(&report);
    }
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "indexed {}: {}, {}",
        fmt::count(report.snapshots as usize, "snapshot", "snapshots"),
        fmt::count(report.runs as usize, "tab run", "tab runs"),
        fmt::count(
            report.entries as usize,
            "distinct title and URL",
            "distinct titles and URLs"
        ),
    )?;
    out.flush()?;
    Ok(())
}
