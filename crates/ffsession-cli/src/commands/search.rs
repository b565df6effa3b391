//! `ffsession search`: find tabs by title or URL across every snapshot.

use std::io::{self, BufWriter, Write};

use anyhow::Result;
use clap::Args;
use ffsession::store::{SearchError, TimeRange};
use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::Timestamp;

use crate::cli::GlobalArgs;
use crate::error::UserError;
use crate::fmt;

/// Search the backup store's tab index for tabs whose title or URL match
/// QUERY, best match first: each with its title, URL, when it was first and
/// last seen, in how many snapshots, and the newest snapshot holding it (to
/// `restore` or `diff`). Open and recently closed tabs count.
///
/// QUERY is SQLite FTS5 query syntax: words match whole words (or, with a
/// trailing `*`, prefixes) in titles and URLs, all of them must match;
/// `OR`, `NOT` and `title:` / `url:` narrow it down; text in double quotes is
/// a phrase. Snapshots taken before the tab index existed are searchable
/// after `ffsession reindex`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession search rust                    tabs with \"rust\" in the title or URL
  ffsession search 'borrow check*'         both words, the second as a prefix
  ffsession search '\"release notes\" OR changelog'
  ffsession search 'url:github' --since 2026-11-01
  ffsession search kernel --until 2026-10-31T18:00:00Z --json")]
pub struct SearchArgs {
    /// What to look for (FTS5 query syntax)
    #[arg(value_name = "QUERY")]
    pub query: String,

    /// Only count snapshots taken on or after this date (YYYY-MM-DD, local
    /// time) or instant (RFC 3339)
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,

    /// Only count snapshots taken on or before this date (the whole day, local
    /// time) or before this instant (RFC 3339)
    #[arg(long, value_name = "DATE")]
    pub until: Option<String>,

    /// Show at most this many tabs
    #[arg(long, default_value_t = 50, value_name = "N")]
    pub limit: usize,

    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

pub fn run(global: &GlobalArgs, args: SearchArgs) -> Result<()> {
    let range = TimeRange {
        since_ms: args
            .since
            .as_deref()
            .map(|d| parse_time("--since", d, false))
            .transpose()?,
        until_ms: args
            .until
            .as_deref()
            .map(|d| parse_time("--until", d, true))
            .transpose()?,
    };
    let (store, _) = super::open_store_with_snapshots(global)?;
    let hits = match store.search_tabs(&args.query, range, args.limit) {
        Ok(hits) => hits,
        Err(e @ SearchError::BadQuery { .. }) => {
            let hint = e.hint().unwrap_or_default().to_owned();
            return Err(UserError::with_hint(e.to_string(), hint));
        }
        Err(SearchError::Store(e)) => return Err(e.into()),
    };
    if args.json {
        return super::print_json(&hits);
    }
    let mut out = BufWriter::new(io::stdout().lock());
    if hits.is_empty() {
        writeln!(out, "no tabs match {:?}", args.query)?;
    }
    for h in &hits {
        let title = if h.title.is_empty() {
            "(no title)"
        } else {
            &h.title
        };
        writeln!(out, "{title}")?;
        writeln!(out, "  {}", h.url)?;
        writeln!(
            out,
            "  seen {} .. {} in {}, newest #{}",
            fmt::local_time_or_unknown(Some(h.first_seen_ms)),
            fmt::local_time_or_unknown(Some(h.last_seen_ms)),
            fmt::count(h.snapshots as usize, "snapshot", "snapshots"),
            h.newest_snapshot,
        )?;
        if let Some(a) = &h.archived {
            writeln!(
                out,
                "  archived {} by tidy ({}), in snapshot #{}",
                fmt::local_time_or_unknown(Some(a.archived_at_ms)),
                a.reason,
                a.snapshot
            )?;
        }
    }
    out.flush()?;
    Ok(())
}

/// `2026-11-01` (local midnight; with `end_of_day`, the next midnight) or an
/// RFC 3339 instant, as ms since the epoch.
pub fn parse_time(flag: &str, text: &str, end_of_day: bool) -> Result<u64> {
    let bad = || {
        UserError::with_hint(
            format!("{flag}: cannot read {text:?} as a date or time"),
            "write a date as 2026-11-01, or a time as 2026-11-01T18:30:00Z or 2026-11-01T18:30:00+01:00",
        )
    };
    let ts = if let Ok(ts) = text.parse::<Timestamp>() {
        ts
    } else {
        let date: Date = text.parse().map_err(|_| bad())?;
        let date = if end_of_day {
            date.tomorrow().map_err(|_| bad())?
        } else {
            date
        };
        date.to_zoned(TimeZone::system())
            .map_err(|_| bad())?
            .timestamp()
    };
    u64::try_from(ts.as_millisecond()).map_err(|_| bad())
}
