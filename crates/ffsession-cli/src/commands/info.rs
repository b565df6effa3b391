//! `ffsession info`: what a session file holds, in numbers.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use ffsession::format::FileSummary;
use ffsession::{Format, Summary};
use serde::Serialize;

use crate::cli::GlobalArgs;
use crate::fmt;

/// Summarize a session: format and sizes, windows, tabs, closed tabs and
/// windows, when it was last written and when the browser session started.
///
/// Without FILE, reads the newest valid session file of the profile. FILE may
/// also be Zen's own sessions file (zen-sessions.jsonlz4): its spaces, each
/// with its tabs, and when Zen collected it.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Session file (mozlz4 or JSON) [default: the profile's newest]
    pub file: Option<PathBuf>,

    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct InfoJson<'a> {
    file: &'a std::path::Path,
    format: Format,
    file_size: u64,
    json_size: usize,
    #[serde(flatten)]
    summary: &'a Summary,
    last_update_local: Option<String>,
    start_time_local: Option<String>,
    /// Zen's sessions file: its spaces, each with its tabs, and more.
    #[serde(skip_serializing_if = "Option::is_none")]
    zen: Option<&'a ffsession::zen::ZenSummary>,
}

pub fn run(global: &GlobalArgs, args: InfoArgs) -> Result<()> {
    let file = match &args.file {
        // A summary keeps nothing of the JSON: a large file is counted as it
        // decodes, in a few MiB (`format/summarize.rs`).
        Some(file) => FileSummary::read(file)?,
        None => {
            let data = super::load_session(global, None)?;
            FileSummary::of(&data, data.parse()?.summary())
        }
    };
    let summary = &file.summary;
    let ts = summary.timestamps;
    if args.json {
        return super::print_json(&InfoJson {
            file: &file.path,
            format: file.format,
            file_size: file.file_size,
            json_size: file.json_size,
            summary,
            last_update_local: ts.last_update.and_then(fmt::local_time),
            start_time_local: ts.start_time.and_then(fmt::local_time),
            zen: file.zen.as_ref(),
        });
    }
    // Written in one go (stdout alone writes each line as it ends).
    let mut out = io::BufWriter::new(io::stdout().lock());
    let size = match file.format {
        Format::Mozlz4 => format!(
            "mozlz4, {} compressed, {} JSON",
            fmt::size(file.file_size),
            fmt::size(file.json_size as u64)
        ),
        Format::Json => format!("json, {}", fmt::size(file.file_size)),
    };
    let s = summary;
    writeln!(out, "file:            {}", file.path.display())?;
    writeln!(out, "format:          {size}")?;
    if let Some(zen) = &file.zen {
        zen_info(&mut out, zen)?;
        out.flush()?;
        return Ok(());
    }
    let selected = s
        .selected_window
        .map(|w| format!(" (selected: {w})"))
        .unwrap_or_default();
    writeln!(out, "windows:         {}{selected}", s.windows)?;
    writeln!(
        out,
        "tabs:            {} ({} pinned, {} hidden, {} history entries)",
        s.tabs, s.pinned_tabs, s.hidden_tabs, s.history_entries
    )?;
    if s.tab_groups + s.saved_groups > 0 {
        writeln!(
            out,
            "tab groups:      {} open, {} saved",
            s.tab_groups, s.saved_groups
        )?;
    }
    writeln!(out, "closed tabs:     {}", s.closed_tabs)?;
    writeln!(
        out,
        "closed windows:  {} ({} tabs)",
        s.closed_windows, s.closed_window_tabs
    )?;
    writeln!(
        out,
        "last update:     {}",
        fmt::local_time_or_unknown(ts.last_update)
    )?;
    writeln!(
        out,
        "session started: {}",
        fmt::local_time_or_unknown(ts.start_time)
    )?;
    writeln!(out, "recent crashes:  {}", ts.recent_crashes.unwrap_or(0))?;
    out.flush()?;
    Ok(())
}

/// The rest of `info` on Zen's sessions file.
fn zen_info(out: &mut impl Write, z: &ffsession::zen::ZenSummary) -> io::Result<()> {
    writeln!(
        out,
        "kind:            Zen's sessions file (spaces and sidebar)"
    )?;
    let spaces: Vec<String> = z
        .space_tabs
        .iter()
        .map(|s| {
            let name = s.name.as_deref().or(s.uuid.as_deref()).unwrap_or("?");
            format!(
                "{}: {}",
                fmt::escape(name),
                fmt::count(s.tabs, "tab", "tabs")
            )
        })
        .collect();
    let listed = if spaces.is_empty() {
        String::new()
    } else {
        format!(" ({})", spaces.join(", "))
    };
    writeln!(out, "spaces:          {}{listed}", z.spaces)?;
    writeln!(
        out,
        "tabs:            {} ({} pinned, {} essential, {} history entries)",
        z.tabs, z.pinned_tabs, z.essential_tabs, z.history_entries
    )?;
    writeln!(
        out,
        "folders:         {} ({} split views, {} tab groups)",
        z.folders, z.split_views, z.tab_groups
    )?;
    writeln!(
        out,
        "last update:     {}",
        fmt::local_time_or_unknown(z.last_collected)
    )
}
