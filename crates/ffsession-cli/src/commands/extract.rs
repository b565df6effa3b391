//! `ffsession extract`: a session file holding only some windows or tabs.

use std::collections::HashSet;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use ffsession::store::SnapshotId;
use ffsession::tidy::{self, EditResult, Editable, Selection};
use ffsession::{format, fs_util, Error, SessionData};

use crate::cli::GlobalArgs;
use crate::error::UserError;

/// Write a session file holding only the chosen windows or tabs of SOURCE,
/// each tab as Firefox wrote it (history, form data and all).
///
/// SOURCE is a session file, a snapshot id from `ffsession list`, or
/// `current` (the profile's newest session file). --window keeps whole
/// windows with their recently closed tabs; --archived keeps the open tabs
/// `ffsession tidy` archived (use the snapshot tidy printed as SOURCE);
/// --query keeps the open tabs whose title or URL match (FTS5 syntax, as
/// `ffsession search`). OUT is a mozlz4 file Firefox loads, written atomically.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession extract current --window 2 -o window2.jsonlz4
  ffsession extract 42 --archived -o archived.jsonlz4
  ffsession extract session.jsonlz4 --query 'rust OR cargo' -o rust.jsonlz4")]
pub struct ExtractArgs {
    /// Session file, snapshot id, or `current`
    pub source: String,

    /// Keep this window (1-based; repeat for more)
    #[arg(long, short = 'w', value_name = "N", required_unless_present_any = ["archived", "query"], conflicts_with_all = ["archived", "query"])]
    pub window: Vec<usize>,

    /// Keep the tabs `tidy` archived (by URL)
    #[arg(long, conflicts_with = "query")]
    pub archived: bool,

    /// Keep the tabs whose title or URL match this FTS5 query
    #[arg(long, value_name = "FTS")]
    pub query: Option<String>,

    /// Output file (mozlz4)
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: PathBuf,

    /// Print what was written as JSON
    #[arg(long)]
    pub json: bool,
}

/// Read SOURCE: a file, a snapshot id, or `current`.
pub fn load_source(global: &GlobalArgs, source: &str) -> Result<SessionData> {
    let path = Path::new(source);
    if source == "current" && !path.exists() {
        let profile = global.profile()?;
        return Ok(tidy::load_current(&profile.path)?.data);
    }
    if !path.exists() {
        if let Ok(id) = source.parse::<i64>() {
            let config = global.config()?;
            let store = super::open_existing_store(&global.chosen_store_dir(&config)?, false)?;
            let json = store.read_json(SnapshotId(id))?;
            return Ok(SessionData::from_bytes(format!("snapshot {id}"), json)?);
        }
    }
    Ok(SessionData::read(path)?)
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

pub fn run(global: &GlobalArgs, args: ExtractArgs) -> Result<()> {
    let data = load_source(global, &args.source)?;
    let session = Editable::new(&data)?;
    let urls: HashSet<String>;
    let selection = if let Some(q) = &args.query {
        Selection::Query(q)
    } else if args.archived {
        let config = global.config()?;
        let store = super::open_existing_store(&global.chosen_store_dir(&config)?, false)?;
        urls = store.archived_tabs()?.into_iter().map(|a| a.url).collect();
        if urls.is_empty() {
            return Err(UserError::with_hint(
                format!("no archived tabs in {}", store.dir().display()),
                "`ffsession tidy` archives tabs",
            ));
        }
        Selection::Urls(urls)
    } else {
        Selection::Windows(args.window.clone())
    };
    let result = tidy::extract(&session, &selection)?;
    write_and_report(&args.output, &[data.path()], &result, args.json)
}
