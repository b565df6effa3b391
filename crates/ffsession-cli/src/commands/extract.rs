//! `ffsession extract`: a session file holding only some windows or tabs.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use ffsession::store::{literal_query, ArchivedTab};
use ffsession::tidy::{self, EditResult, Editable, Picked, Selection};
use ffsession::{format, fs_util, Error, SessionData};

use super::naming::{self, Named, Takes};
use crate::cli::GlobalArgs;
use crate::error::UserError;

/// Write a session file holding only the chosen windows or tabs of SOURCE,
/// each tab as Firefox wrote it (history, form data and all).
///
/// SOURCE is a session file, a snapshot id from `ffsession list`, or
/// `current` (the profile's newest session file). --window keeps whole
/// windows with their recently closed tabs; --tab keeps the open tabs it
/// names (window and position, as `ffsession tabs` lists them), and with it
/// or alone --closed-tab, --closed-window, --closed-window-tab and
/// --archived-tab name recently closed tabs and windows (as `ffsession tabs
/// --closed` lists them) and archived tabs, which become open tabs and
/// windows of OUT, as Firefox reopens them, history and all; --archived keeps exactly the tabs
/// `ffsession tidy` closed (SOURCE is then the snapshot tidy printed, "to
/// undo: ffsession restore ID"; `ffsession tabs --archived` lists them);
/// --query keeps the open tabs whose title or URL match (words as written,
/// or FTS5 syntax with --fts, as `ffsession search`). OUT is a mozlz4 file Firefox loads, written atomically.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession extract current --window 2 -o window2.jsonlz4
  ffsession extract 42 --tab 1:3 --tab 2:1 -o two-tabs.jsonlz4
  ffsession extract 42 --closed-tab 1:1 --closed-window 2 -o reopened.jsonlz4
  ffsession extract 42 --archived-tab 3 -o one-archived.jsonlz4
  ffsession extract 42 --archived -o archived.jsonlz4
  ffsession extract session.jsonlz4 --query github.com -o github.jsonlz4
  ffsession extract session.jsonlz4 --query 'rust OR cargo' --fts -o rust.jsonlz4")]
pub struct ExtractArgs {
    /// Session file, snapshot id, or `current` (`./FILE`, `snapshot:N`,
    /// `profile:current` where a file has such a name)
    pub source: String,

    /// Keep this window (1-based; repeat for more)
    #[arg(long, short = 'w', value_name = "N", required_unless_present_any = ["archived", "query", "tab", "closed_tab", "closed_window", "closed_window_tab", "archived_tab"], conflicts_with_all = ["archived", "query", "tab", "closed_tab", "closed_window", "closed_window_tab", "archived_tab"])]
    pub window: Vec<usize>,

    /// Keep this open tab: its window and its position there, both 1-based
    /// as `ffsession tabs` lists them (2:5 is window 2's fifth tab; repeat
    /// for more)
    #[arg(long, short = 't', value_name = "W:P", value_parser = parse_tab, conflicts_with_all = ["archived", "query"])]
    pub tab: Vec<(usize, usize)>,

    /// Keep this recently closed tab, reopened at the end of its window:
    /// the window and the tab's place in that window's closed tabs, as
    /// `ffsession tabs --closed` lists it (`1:2 [closed]`; repeat for more)
    #[arg(long, value_name = "W:P", value_parser = parse_tab, conflicts_with_all = ["archived", "query"])]
    pub closed_tab: Vec<(usize, usize)>,

    /// Keep this recently closed window, reopened whole: its number among
    /// the closed windows, as `ffsession tabs --closed` lists them
    /// (`2:1 [closed-window]` is a tab of closed window 2; repeat for more)
    #[arg(long, value_name = "N", value_parser = parse_number, conflicts_with_all = ["archived", "query"])]
    pub closed_window: Vec<usize>,

    /// Keep this tab of a recently closed window, reopened in that window:
    /// N:P as `ffsession tabs --closed` lists it (`2:1 [closed-window]`;
    /// repeat for more)
    #[arg(long, value_name = "N:P", value_parser = parse_tab, conflicts_with_all = ["archived", "query"])]
    pub closed_window_tab: Vec<(usize, usize)>,

    /// Keep the Nth of the tabs `tidy` archived from SOURCE (a snapshot id),
    /// in the order tidy recorded them, as the snapshot's page of
    /// `ffsession ui` and `ffsession tabs --archived --json` list them
    /// (repeat for more)
    #[arg(long, value_name = "N", value_parser = parse_number, conflicts_with_all = ["archived", "query"])]
    pub archived_tab: Vec<usize>,

    /// Keep exactly the tabs `tidy` archived (SOURCE: the snapshot tidy took)
    #[arg(long, conflicts_with = "query")]
    pub archived: bool,

    /// Keep the tabs whose title or URL match these words (as `search`)
    #[arg(long, value_name = "QUERY")]
    pub query: Option<String>,

    /// Read --query as SQLite FTS5 query syntax (OR, NOT, title:, "phrases")
    #[arg(long, requires = "query")]
    pub fts: bool,

    /// Output file (mozlz4)
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: PathBuf,

    /// Print what was written as JSON
    #[arg(long)]
    pub json: bool,
}

/// `--tab W:P` (clap's value parser: a bad value is a usage error naming
/// the option).
fn parse_tab(text: &str) -> Result<(usize, usize), String> {
    let bad =
        || "write a tab as WINDOW:POSITION, both from 1: 2:5 is window 2's fifth tab".to_owned();
    let (w, p) = text.split_once(':').ok_or_else(bad)?;
    let (w, p): (usize, usize) = (w.parse().map_err(|_| bad())?, p.parse().map_err(|_| bad())?);
    if w == 0 || p == 0 {
        return Err(bad());
    }
    Ok((w, p))
}

/// A number from 1 (`--closed-window`, `--archived-tab`).
fn parse_number(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err("write a number from 1".to_owned()),
    }
}

/// Read SOURCE: a file, a snapshot id, or `current` ([`naming::parse`]).
pub fn load_source(global: &GlobalArgs, source: &str) -> Result<SessionData> {
    let takes = Takes {
        latest: false,
        current: true,
    };
    match naming::parse(source, takes)? {
        Named::Current => {
            let profile = global.profile()?;
            Ok(tidy::load_current(&profile.path)?.data)
        }
        Named::Snapshot(id) => {
            let config = global.config()?;
            let store = super::open_existing_store(&global.chosen_store_dir(&config)?, false)?;
            let json = store.read_json(id)?;
            Ok(SessionData::from_bytes(format!("snapshot {id}"), json)?)
        }
        Named::File(path) => Ok(SessionData::read(&path)?),
        // Not taken here (`latest: false`): never read as one.
        Named::Latest => Err(UserError::usage(
            format!("{source}: give a snapshot id, a session file or `current`"),
            format!("{} shows the snapshots", crate::context::quoted(&["list"])),
        )),
    }
}

/// Refuse to write over an input; write `result` as mozlz4 to `out`.
pub fn write_result(out: &Path, inputs: &[&Path], result: &EditResult) -> Result<()> {
    let target = out.canonicalize().ok();
    for input in inputs {
        if target.is_some() && input.canonicalize().ok() == target {
            return Err(Error::WouldOverwriteInput {
                path: out.to_path_buf(),
            }
            .into());
        }
    }
    let packed = format::compress(&result.json).map_err(|source| Error::Format {
        path: out.to_path_buf(),
        source,
    })?;
    fs_util::write_atomic(out, |w| w.write_all(&packed))?;
    Ok(())
}

/// Write `result` to `out` (as [`write_result`]) and say what was written, as
/// JSON or a line of text.
pub fn write_and_report(
    out: &Path,
    inputs: &[&Path],
    result: &EditResult,
    json: bool,
) -> Result<()> {
    write_result(out, inputs, result)?;
    if json {
        return super::print_json(result);
    }
    writeln!(
        io::stdout().lock(),
        "wrote {}: {} with {}",
        out.display(),
        crate::fmt::count(result.windows, "window", "windows"),
        crate::fmt::count(result.tabs, "tab", "tabs")
    )?;
    Ok(())
}

/// The tabs `tidy` archived in the snapshot `source` names; an error when
/// `source` is not a snapshot id, or names one that holds no archived tab.
fn archived_of(global: &GlobalArgs, source: &str) -> Result<Vec<ArchivedTab>> {
    let config = global.config()?;
    let store = super::open_existing_store(&global.chosen_store_dir(&config)?, false)?;
    let snapshots = store.archive_snapshots()?;
    let hint = match snapshots.as_slice() {
        [] => format!(
            "{} archives the tabs it closes, in the snapshot it takes first",
            global.quoted(&["tidy"])
        ),
        [one] => format!(
            "snapshot {one} holds archived tabs: {}",
            global.quoted(&[
                "extract",
                &format!("snapshot:{one}"),
                "--archived",
                "-o",
                "FILE"
            ])
        ),
        more => format!(
            "these snapshots hold archived tabs: {} ({} lists them)",
            more.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            global.quoted(&["tabs", "--archived"])
        ),
    };
    let takes = Takes {
        latest: false,
        current: true,
    };
    let id = match naming::parse(source, takes)? {
        Named::Snapshot(id) => id,
        _ => {
            return Err(UserError::with_hint(
                format!("{source}: --archived reads the snapshot `tidy` took before closing the tabs; give its id as SOURCE, not a file or `current`"),
                hint,
            ))
        }
    };
    let tabs = store.archived_in(id)?;
    if tabs.is_empty() {
        return Err(UserError::with_hint(
            format!("snapshot {id} holds no tab `tidy` archived"),
            hint,
        ));
    }
    Ok(tabs)
}

pub fn run(global: &GlobalArgs, args: ExtractArgs) -> Result<()> {
    let mut archived = if args.archived || !args.archived_tab.is_empty() {
        archived_of(global, &args.source)?
    } else {
        Vec::new()
    };
    if !args.archived_tab.is_empty() {
        let all = std::mem::take(&mut archived);
        for &n in &args.archived_tab {
            let tab = all.get(n - 1).ok_or_else(|| {
                UserError::with_hint(
                    format!(
                        "--archived-tab {n}: snapshot {} holds {} archived tabs",
                        args.source,
                        all.len()
                    ),
                    format!(
                        "{} writes them all",
                        crate::context::quoted(&[
                            "extract",
                            &args.source,
                            "--archived",
                            "-o",
                            "FILE"
                        ])
                    ),
                )
            })?;
            if !archived.contains(tab) {
                archived.push(tab.clone());
            }
        }
    }
    let data = load_source(global, &args.source)?;
    let session = Editable::new(&data)?;
    let query = match &args.query {
        Some(q) if args.fts => Some(q.clone()),
        Some(q) => Some(
            literal_query(q)
                .ok_or_else(|| UserError::usage("--query is empty", "give a word to look for"))?,
        ),
        None => None,
    };
    let selection = if let Some(q) = &query {
        Selection::Query(q)
    } else if args.archived {
        Selection::Archived(&archived)
    } else if !(args.closed_tab.is_empty()
        && args.closed_window.is_empty()
        && args.closed_window_tab.is_empty()
        && args.archived_tab.is_empty())
    {
        Selection::Picked(Picked {
            tabs: args.tab.clone(),
            closed_tabs: args.closed_tab.clone(),
            closed_windows: args.closed_window.clone(),
            closed_window_tabs: args.closed_window_tab.clone(),
            archived: &archived,
        })
    } else if !args.tab.is_empty() {
        Selection::Tabs(args.tab.clone())
    } else {
        Selection::Windows(args.window.clone())
    };
    let result = tidy::extract(&session, &selection)?;
    write_and_report(&args.output, &[data.path()], &result, args.json)
}
