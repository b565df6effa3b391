//! `ffsession tabs`: list every tab of a session.

use std::io::{self, BufWriter};
use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};
use ffsession::export::{write_tabs, TabFormat};
use ffsession::session::TabFilter;

use crate::cli::GlobalArgs;
use crate::error::UserError;

/// List the tabs of a session: each tab's window, position, title and URL (the
/// current entry of its back/forward history).
///
/// Without FILE, reads the newest valid session file of the profile.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession tabs --format urls > urls.txt
  ffsession tabs --format bookmarks > tabs.html   (Firefox: Import Bookmarks from HTML)
  ffsession tabs --closed --format csv > all.csv")]
pub struct TabsArgs {
    /// Session file (mozlz4 or JSON) [default: the profile's newest]
    pub file: Option<PathBuf>,

    /// Only the tabs of this window (1-based, in file order)
    #[arg(long, short = 'w', value_name = "N")]
    pub window: Option<usize>,

    /// Also list recently closed tabs and the tabs of recently closed windows
    #[arg(long)]
    pub closed: bool,

    /// Output format
    #[arg(long, short = 'f', value_enum, default_value_t = FormatArg::Text)]
    pub format: FormatArg,

    /// Shorthand for --format json
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
}

/// Output formats of `ffsession tabs`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum FormatArg {
    /// window:position [flags], title and URL, tab-separated, one tab per line
    Text,
    /// a JSON array of tab objects
    Json,
    /// one JSON object per line
    Jsonl,
    /// CSV with a header row
    Csv,
    /// a Markdown list of links, one heading per window
    Markdown,
    /// URLs only, one per line
    Urls,
    /// Netscape bookmarks HTML that Firefox imports, a folder per window
    Bookmarks,
}

impl From<FormatArg> for TabFormat {
    fn from(f: FormatArg) -> Self {
        match f {
            FormatArg::Text => TabFormat::Text,
            FormatArg::Json => TabFormat::Json,
            FormatArg::Jsonl => TabFormat::Jsonl,
            FormatArg::Csv => TabFormat::Csv,
            FormatArg::Markdown => TabFormat::Markdown,
            FormatArg::Urls => TabFormat::Urls,
            FormatArg::Bookmarks => TabFormat::Bookmarks,
        }
    }
}

pub fn run(global: &GlobalArgs, args: TabsArgs) -> Result<()> {
    let data = super::load_session(global, args.file.as_deref())?;
    let session = data.parse()?;
    if let Some(w) = args.window {
        if w == 0 || w > session.windows.len() {
            return Err(UserError::with_hint(
                format!(
                    "{}: no window {w} (the session has {} windows)",
                    data.path().display(),
                    session.windows.len()
                ),
                "windows are numbered from 1; `ffsession info` shows how many there are",
            ));
        }
    }
    let filter = TabFilter {
        window: args.window,
        include_closed: args.closed,
    };
    let format = if args.json {
        TabFormat::Json
    } else {
        args.format.into()
    };
    let out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    write_tabs(out, format, session.tab_records(filter))?;
    Ok(())
}
