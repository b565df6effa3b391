//! `ffsession reindex`: rebuild the tab index from the stored snapshots.

use std::io::{self, IsTerminal, Write};

use anyhow::Result;
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cli::GlobalArgs;
use crate::fmt;

/// Rebuild the tab index that `search` and `history` use, from every verified
/// snapshot in the store (each one read and checked again); with --catalog,
/// first the catalog itself, from the manifests beside the chunks.
///
/// The tab index (index.sqlite) is derived data: `backup` keeps it up to
/// date, and a damaged index is deleted and built again by the next backup.
/// Run this when `search` says the index cannot be read, or once after
/// upgrading from an ffsession without a tab index. A snapshot that does not
/// read back whole is left out and named. Shows a progress bar on stderr when
/// stderr is a terminal.
///
/// --catalog is for a catalog `check` calls damaged (or a lost one): every
/// snapshot, content and archived tab is read from its manifest, the old
/// catalog is kept beside as catalog.sqlite.damaged-<time>, never deleted.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession reindex                 index every snapshot's tabs again
  ffsession reindex --catalog       rebuild a damaged catalog, then the tab index
  ffsession reindex --json          the counts as JSON")]
pub struct ReindexArgs {
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,

    /// Rebuild the catalog from the store's manifests first
    #[arg(long)]
    pub catalog: bool,
}

pub fn run(global: &GlobalArgs, args: ReindexArgs) -> Result<()> {
    let config = global.config()?;
    let dir = global.chosen_store_dir(&config)?;
    let rebuilt = if args.catalog {
        if super::no_store_yet(&dir) {
            super::open_existing_store(&dir, false)?;
        }
        let report = crate::lock_wait::with_lock_wait(&dir, global.lock_wait, || {
            ffsession::store::rebuild_catalog(&dir, super::now_ms())
        })?;
        for (path, why) in &report.unusable {
            crate::ui::warning(format_args!("{}: not used: {why}", path.display()));
        }
        Some(report)
    } else {
        None
    };
    let mut store = super::open_existing_store_waiting(global, &dir)?;
    let bar = ProgressBar::new(0);
    if io::stderr().is_terminal() && !crate::ui::quiet() {
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
        #[derive(serde::Serialize)]
        struct Both<'a> {
            #[serde(skip_serializing_if = "Option::is_none")]
            catalog: Option<&'a ffsession::store::RebuildReport>,
            #[serde(flatten)]
            index: &'a ffsession::store::ReindexReport,
        }
        return super::print_json(&Both {
            catalog: rebuilt.as_ref(),
            index: &report,
        });
    }
    let mut out = io::stdout().lock();
    if let Some(r) = &rebuilt {
        writeln!(
            out,
            "rebuilt the catalog from the manifests: {}, {}, {}",
            fmt::count(r.snapshots as usize, "snapshot", "snapshots"),
            fmt::count(r.contents as usize, "content", "contents"),
            fmt::count(r.chunks as usize, "chunk", "chunks"),
        )?;
        if let Some(old) = &r.old_catalog {
            writeln!(out, "the old catalog is kept as {}", old.display())?;
        }
    }
    for (id, why) in &report.skipped {
        crate::ui::warning(format_args!("snapshot {id} left out of the index: {why}"));
    }
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
