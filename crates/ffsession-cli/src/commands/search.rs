//! `ffsession search`: find tabs by title or URL across every snapshot.

use std::io::{self, BufWriter, Write};

use anyhow::Result;
use clap::Args;
use ffsession::store::{literal_query, SearchError, TimeRange};
use jiff::civil::Date;
use jiff::Timestamp;

use crate::cli::GlobalArgs;
use crate::error::{NoMatch, UserError};
use crate::fmt;

/// Search the backup store's tab index for tabs whose title or URL match
/// QUERY, best match first: each with its title, URL, when it was first and
/// last seen, in how many snapshots, and the newest snapshot holding it (to
/// `restore` or `diff`). Open and recently closed tabs count. Times are the
/// sessions' own (Firefox's last update of each; the backup time when a file
/// does not say), so an old session backed up late counts as old.
///
/// QUERY is matched as written: every word must appear in the title or URL,
/// case aside (several words may be given with or without quotes, as in a
/// search box); a word with punctuation (127.0.0.1, example.com,
/// https://host/path) matches those parts in that order, and a word ending in
/// `*` matches as a prefix. With --fts, QUERY is SQLite FTS5 query syntax
/// instead: `OR`, `NOT`, `title:` / `url:`, "quoted phrases". Snapshots taken
/// before the tab index existed are searchable after `ffsession reindex`.
///
/// Shows the best 50 tabs unless --limit or --all says otherwise; when more
/// tabs match, says so on stderr.
///
/// Exits with 1 when no tab matches (as grep does), 0 when some do.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession search rust                    tabs with \"rust\" in the title or URL
  ffsession search 127.0.0.1:8080          a local server's tabs
  ffsession search borrow 'check*'        both words, the second as a prefix
  ffsession search github --all            every matching tab, not just the best 50
  ffsession search --fts '\"release notes\" OR changelog'
  ffsession search --fts 'url:github' --since 2026-11-01
  ffsession search kernel --until 2026-10-31T18:00:00Z --json")]
pub struct SearchArgs {
    /// What to look for: words, matched as written (every word must match)
    #[arg(value_name = "QUERY", required = true, num_args = 1..)]
    pub query: Vec<String>,

    /// Read QUERY as SQLite FTS5 query syntax (OR, NOT, title:, url:, "phrases")
    #[arg(long)]
    pub fts: bool,

    /// Only count sessions last updated on or after this date (YYYY-MM-DD,
    /// local time) or instant (RFC 3339)
    #[arg(long, value_name = "DATE", value_parser = since_arg)]
    pub since: Option<u64>,

    /// Only count sessions last updated on or before this date (the whole
    /// day, local time) or before this instant (RFC 3339)
    #[arg(long, value_name = "DATE", value_parser = until_arg)]
    pub until: Option<u64>,

    /// Show at most this many tabs (the best ones)
    #[arg(long, default_value_t = 50, value_name = "N")]
    pub limit: usize,

    /// Show every matching tab (no --limit)
    #[arg(long, conflicts_with = "limit")]
    pub all: bool,

    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

pub fn run(global: &GlobalArgs, args: SearchArgs) -> Result<()> {
    let range = TimeRange {
        since_ms: args.since,
        until_ms: args.until,
    };
    let text = args.query.join(" ");
    let query = if args.fts {
        text.clone()
    } else {
        literal_query(&text).ok_or_else(|| {
            UserError::usage("the search query is empty", "give a word to look for")
        })?
    };
    let (store, _) = super::open_store_with_snapshots(global)?;
    let limit = if args.all { usize::MAX } else { args.limit };
    // One more than shown, to know whether the limit cut the list.
    let mut hits = match store.search_tabs(&query, range, limit.saturating_add(1)) {
        Ok(hits) => hits,
        Err(e @ SearchError::BadQuery { .. }) => {
            let hint = format!(
                "{}; or leave out --fts to match the words as written",
                e.hint().map(|h| global.word(&h)).unwrap_or_default()
            );
            return Err(UserError::with_hint(e.to_string(), hint));
        }
        Err(SearchError::Store(e)) => return Err(e.into()),
    };
    let cut = hits.len() > limit;
    hits.truncate(limit);
    if args.json {
        super::print_json(&hits)?;
    }
    if hits.is_empty() {
        return Err(NoMatch(format!("no tabs match {text:?}")).into());
    }
    if args.json {
        say_cut(cut, limit);
        return Ok(());
    }
    let mut out = BufWriter::new(io::stdout().lock());
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
                "  {} {} by tidy ({}), in snapshot #{}{}",
                if a.stayed_open {
                    "a copy of it archived"
                } else {
                    "archived"
                },
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
    say_cut(cut, limit);
    Ok(())
}

/// When the limit left matching tabs out, say so on stderr (stdout keeps
/// only the tabs shown).
fn say_cut(cut: bool, limit: usize) {
    if cut {
        crate::ui::note(format_args!(
            "showed the best {}; more tabs match (--limit N shows more, --all shows every one)",
            fmt::count(limit, "tab", "tabs")
        ));
    }
}

fn since_arg(text: &str) -> Result<u64, String> {
    parse_time(text, false)
}

fn until_arg(text: &str) -> Result<u64, String> {
    parse_time(text, true)
}

/// `2026-11-01` (local midnight; with `end_of_day`, the next midnight) or an
/// RFC 3339 instant, as ms since the epoch (clap's value parser: a bad value
/// is a usage error naming the option).
pub fn parse_time(text: &str, end_of_day: bool) -> Result<u64, String> {
    let bad = || {
        "write a date as 2026-11-01, or a time as 2026-11-01T18:30:00Z or 2026-11-01T18:30:00+01:00"
            .to_owned()
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
        date.to_zoned(crate::fmt::local_zone())
            .map_err(|_| bad())?
            .timestamp()
    };
    u64::try_from(ts.as_millisecond()).map_err(|_| bad())
}
