//! `ffsession history`: when a URL was open, according to the snapshots.

use std::io::{self, BufWriter, Write};

use anyhow::Result;
use clap::Args;
use ffsession::session::TabState;

use crate::cli::GlobalArgs;
use crate::error::NoMatch;
use crate::fmt;

/// Show every stretch of time a URL was in the backups: runs of consecutive
/// snapshots (by the session's own time: Firefox's last update of it) that
/// hold it in the same state
/// (open, recently closed, or in a recently closed window), with the windows
/// it was in. These are the snapshots `ffsession search` counts. URL must
/// match a tab's URL exactly; find it with `ffsession search`.
///
/// Exits with 1 when the URL is in no snapshot (as `search` with no match),
/// 0 when it is in some.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession history https://example.org/docs/
  ffsession history \"$(ffsession search 'url:docs' --json | jq -r '.[0].url')\" --json")]
pub struct HistoryArgs {
    /// The tab's URL, exactly
    #[arg(value_name = "URL")]
    pub url: String,

    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

pub fn run(global: &GlobalArgs, args: HistoryArgs) -> Result<()> {
    let (store, _) = super::open_store_with_snapshots(global)?;
    let stretches = store.tab_history(&args.url)?;
    if args.json {
        super::print_json(&stretches)?;
    }
    if stretches.is_empty() {
        return Err(NoMatch(format!(
            "{} is in no snapshot (neither open nor recently closed)",
            fmt::escape(&args.url)
        ))
        .into());
    }
    if args.json {
        return Ok(());
    }
    let mut out = BufWriter::new(io::stdout().lock());
    for s in &stretches {
        let windows: Vec<String> = s.windows.iter().map(u64::to_string).collect();
        let state = match s.state {
            TabState::Open => "open in window",
            TabState::Closed => "recently closed in window",
            _ => "in recently closed window",
        };
        writeln!(
            out,
            "{} .. {}  {} (#{} .. #{}), {state}{} {}",
            fmt::local_time_or_unknown(Some(s.from_ms)),
            fmt::local_time_or_unknown(Some(s.to_ms)),
            fmt::count(s.snapshots as usize, "snapshot", "snapshots"),
            s.first_snapshot,
            s.last_snapshot,
            if s.windows.len() == 1 { "" } else { "s" },
            windows.join(", "),
        )?;
        if let Some(a) = &s.archived {
            // Tidy closed a copy of the page (a duplicate, an old one), not
            // the page: it is said so.
            let what = if a.stayed_open {
                "a copy of it archived"
            } else {
                "then archived"
            };
            writeln!(
                out,
                "  {what} {} by tidy ({}), in snapshot #{}{}",
                fmt::local_time_or_unknown(Some(a.archived_at_ms)),
                a.reason,
                a.snapshot,
                if a.stayed_open {
                    "; another stayed open"
                } else {
                    ""
                }
            )?;
        }
    }
    out.flush()?;
    Ok(())
}
