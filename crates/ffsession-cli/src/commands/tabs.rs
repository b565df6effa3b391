//! `ffsession tabs`: list every tab of a session.

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use ffsession::export::{write_tabs, TabFormat};
use ffsession::format::SessionData;
use ffsession::session::{Session, TabFilter, TabRecord, TabState};
use ffsession::zen::{self, SpaceNames, ZenTab};

use crate::cli::GlobalArgs;
use crate::error::UserError;

/// List the tabs of a session: each tab's window, position, title and URL (the
/// current entry of its back/forward history).
///
/// Without FILE, reads the newest valid session file of the profile. In a
/// Zen profile each tab shows its space (by name, from the session or Zen's
/// files of the profile); FILE may also be Zen's own sessions file
/// (zen-sessions.jsonlz4), whose tabs are listed as window 1.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession tabs --format urls > urls.txt
  ffsession tabs --format bookmarks > tabs.html   (Firefox: Import Bookmarks from HTML)
  ffsession tabs --closed --format csv > all.csv
  ffsession tabs --archived --format bookmarks > archived.html   tabs `tidy` closed")]
pub struct TabsArgs {
    /// Session file (mozlz4 or JSON) [default: the profile's newest]
    pub file: Option<PathBuf>,

    /// Only the tabs of this window (1-based, in file order)
    #[arg(long, short = 'w', value_name = "N")]
    pub window: Option<usize>,

    /// Also list recently closed tabs and the tabs of recently closed windows
    #[arg(long)]
    pub closed: bool,

    /// List the tabs `ffsession tidy` archived, from the backup store, with
    /// when, why, and the snapshot holding each (`--json` shows all of it;
    /// CSV, Markdown, URLs and bookmarks list them as closed tabs, closed
    /// when archived)
    #[arg(long, conflicts_with_all = ["file", "window", "closed"])]
    pub archived: bool,

    /// Output format
    #[arg(long, short = 'f', value_enum, default_value_t = TabFormat::Text)]
    pub format: TabFormat,

    /// Shorthand for --format json
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
}

pub fn run(global: &GlobalArgs, args: TabsArgs) -> Result<()> {
    if args.archived {
        return archived(global, &args);
    }
    let format = if args.json {
        TabFormat::Json
    } else {
        args.format
    };
    if let (TabFormat::Urls, Some(file), None, false) =
        (format, &args.file, args.window, args.closed)
    {
        // The open tabs' URLs only: a large file is listed as it decodes,
        // keeping none of its JSON (`format/summarize.rs`).
        let urls = ffsession::format::open_tab_urls(file)?;
        let mut out = io::stdout().lock();
        out.write_all(&urls)?;
        out.flush()?;
        return Ok(());
    }
    match &args.file {
        // Parsed while it decodes (`format/at_once.rs`).
        Some(file) => {
            match SessionData::read_parsed(file, |data, session| {
                list(data, &session, &args, format)
            }) {
                Ok(listed) => listed,
                // Not a Firefox session: Zen's own file, or the error.
                Err(e @ ffsession::Error::Parse { .. }) => zen_file(file, e, &args, format),
                Err(e) => Err(e.into()),
            }
        }
        None => {
            let data = super::load_session(global, None)?;
            list(&data, &data.parse()?, &args, format)
        }
    }
}

/// `tabs FILE` on Zen's sessions file: its tabs, each with its space. `e`
/// is the error to give when the file is not Zen's either.
fn zen_file(
    file: &std::path::Path,
    e: ffsession::Error,
    args: &TabsArgs,
    format: TabFormat,
) -> Result<()> {
    let data = SessionData::read(file)?;
    let zen = match data.parse_zen() {
        Ok(zen) if zen.has_zen_fields() => zen,
        _ => return Err(e.into()),
    };
    if let Some(w) = args.window.filter(|&w| w != 1) {
        return Err(UserError::with_hint(
            format!(
                "{}: no window {w} (Zen's sessions file lists its tabs as window 1)",
                file.display()
            ),
            "Zen puts these tabs into every synced window; leave out --window",
        ));
    }
    let out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    write_tabs(out, format, zen.tab_records())?;
    Ok(())
}

/// Write the tabs of `session`, read from `data`, that `args` asks for.
fn list(
    data: &SessionData,
    session: &Session<'_>,
    args: &TabsArgs,
    format: TabFormat,
) -> Result<()> {
    if let Some(w) = args.window {
        if w == 0 || w > session.windows.len() {
            return Err(UserError::with_hint(
                format!(
                    "{}: no window {w} (the session has {} windows)",
                    data.path().display(),
                    session.windows.len()
                ),
                format!(
                    "windows are numbered from 1; {} shows how many there are",
                    crate::context::quoted(&["info", &crate::context::absolute(data.path())])
                ),
            ));
        }
    }
    let filter = TabFilter {
        window: args.window,
        include_closed: args.closed,
    };
    // A Zen profile's tabs name their space by uuid: the names are in the
    // session's own windows, else in Zen's files of the profile, nearest
    // this session's moment first.
    let mut names = SpaceNames::of_session(session);
    let uses_spaces = session
        .windows
        .iter()
        .chain(&session.closed_windows)
        .flat_map(|w| &w.tabs)
        .any(|t| t.zen_workspace().is_some());
    let zen_data: Vec<SessionData> = if uses_spaces {
        zen_files_nearest(data.path(), session.session.last_update)
    } else {
        Vec::new()
    };
    let zens: Vec<_> = zen_data.iter().filter_map(|d| d.parse_zen().ok()).collect();
    for zen in &zens {
        names.add_zen(zen);
    }
    let out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let records = session
        .tab_records_with(filter, zen::mark)
        .map(|r| names.resolve(r));
    write_tabs(out, format, records)?;
    Ok(())
}

/// Zen's files of the profile holding the session file `path`, read, the
/// one whose `lastCollected` is nearest `time` first (unreadable ones left
/// out: they only name spaces).
fn zen_files_nearest(path: &std::path::Path, time: Option<u64>) -> Vec<SessionData> {
    let mut read: Vec<(u64, SessionData)> = ffsession::sources::zen_files_beside(path)
        .into_iter()
        .filter_map(|f| {
            let data = SessionData::read(&f.path).ok()?;
            let at = data.parse_zen().ok()?.last_collected;
            let distance = match (time, at) {
                (Some(t), Some(at)) => t.abs_diff(at),
                _ => u64::MAX,
            };
            Some((distance, data))
        })
        .collect();
    // Stable: equal distances keep the order Zen tries its files in.
    read.sort_by_key(|(distance, _)| *distance);
    read.into_iter().map(|(_, data)| data).collect()
}

fn archived(global: &GlobalArgs, args: &TabsArgs) -> Result<()> {
    let config = global.config()?;
    let store = super::open_existing_store(&global.chosen_store_dir(&config)?, false)?;
    let tabs = store.archived_tabs()?;
    if tabs.is_empty() && !args.json {
        // On stderr: stdout stays a (here empty) list that scripts read.
        crate::ui::note(format_args!(
            "no archived tabs in {} ({} archives the tabs it closes)",
            store.dir().display(),
            crate::context::quoted(&["tidy"])
        ));
    }
    let format = if args.json {
        TabFormat::Json
    } else {
        args.format
    };
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    match format {
        TabFormat::Json => {
            drop(out);
            return super::print_json(&tabs);
        }
        TabFormat::Text => {
            for t in &tabs {
                writeln!(
                    out,
                    "archived {} ({}, snapshot {})\t{}\t{}",
                    crate::fmt::local_time_or_unknown(Some(t.archived_at_ms)),
                    t.reason,
                    t.snapshot,
                    ffsession::export::one_line(&t.title),
                    t.url
                )?;
            }
        }
        _ => {
            let records = tabs.iter().enumerate().map(|(i, t)| TabRecord {
                window: usize::try_from(t.window).unwrap_or(0),
                position: i + 1,
                state: TabState::Archived,
                url: Some(&t.url),
                title: Some(&t.title),
                pinned: false,
                hidden: false,
                selected: false,
                group: None,
                container: 0,
                last_accessed: t.last_accessed,
                closed_at: Some(t.archived_at_ms),
                history_len: 1,
                essential: false,
                space: None,
            });
            write_tabs(&mut out, format, records)?;
        }
    }
    out.flush()?;
    Ok(())
}
