//! `ffsession rescue`: recover the tabs of a damaged session file.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use ffsession::fs_util::{same_file, write_atomic};
use ffsession::rescue::{self, Rescued};
use ffsession::store::SnapshotId;
use ffsession::Summary;
use serde::Serialize;

use super::naming::{self, Named, Takes};
use crate::cli::GlobalArgs;
use crate::error::NothingRescued;
use crate::fmt;

/// Recover every complete tab of a damaged session file.
///
/// Firefox drops a damaged session file whole. But a file cut by a crash or a
/// full disk, or with a flipped bit, is intact up to the damage: rescue
/// decodes it as far as it is valid and keeps every complete window, tab,
/// closed tab and closed window before that point, with all their history,
/// byte for byte. A tab cut by the damage is dropped, never guessed. For
/// damage other than a clean cut, the last few kilobytes before the point
/// where it shows are not trusted either.
///
/// OUT is a mozlz4 session file Firefox loads (written atomically, readable
/// only by you). Look at it with `ffsession tabs OUT`; to open it, quit
/// Firefox and run `ffsession restore OUT`: the profile's current session is
/// backed up first (so the restore can be undone), the recovery files are set
/// aside, and Firefox reopens it at its next start. An undamaged file is
/// written out as it is.
///
/// Exit status: 0 when something was recovered, 4 when nothing was (no tab
/// is complete before the damage), 1 on other errors.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession rescue sessionstore-backups/recovery.jsonlz4 -o rescued.jsonlz4
  ffsession rescue 42 -o rescued.jsonlz4      a damaged snapshot from the store
  ffsession tabs rescued.jsonlz4 --format urls")]
pub struct RescueArgs {
    /// The damaged file (mozlz4 or JSON), or a snapshot id from the store
    /// (`snapshot:N` or `./FILE` where both are named alike)
    #[arg(value_name = "FILE|SNAPSHOT")]
    pub source: String,

    /// Where to write the recovered session (mozlz4)
    #[arg(long, short = 'o', value_name = "OUT")]
    pub output: PathBuf,

    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct Report<'a> {
    source: String,
    output: &'a Path,
    format: ffsession::Format,
    file_size: u64,
    damaged: bool,
    damage: Option<&'a rescue::Damage>,
    #[serde(flatten)]
    recovered: &'a Summary,
    dropped: &'a [String],
}

pub fn run(global: &GlobalArgs, args: RescueArgs) -> Result<()> {
    let (label, rescued) = match snapshot_id(&args.source)? {
        Some(id) => {
            let (label, rescued) = load_snapshot(global, id)?;
            if rescued.recovered_anything() {
                let packed = rescued.to_mozlz4()?;
                write_atomic(&args.output, |w: &mut dyn Write| w.write_all(&packed))?;
            }
            (label, rescued)
        }
        None => {
            let input = Path::new(&args.source);
            if input.exists() && same_file(&args.output, input) {
                return Err(ffsession::Error::WouldOverwriteInput {
                    path: args.output.clone(),
                }
                .into());
            }
            // Written only if something was recovered.
            let rescued = rescue::rescue_file_into(input, &args.output)?;
            (args.source.clone(), rescued)
        }
    };
    if !rescued.recovered_anything() {
        return Err(anyhow::Error::new(NothingRescued(match &rescued.damage {
            Some(d) => format!(
                "{label}: nothing to rescue: no tab is complete before the damage ({} at byte {}, {}%)",
                d.reason, d.file_offset, d.file_percent
            ),
            None => format!("{label}: nothing to rescue: the file is not damaged, and it holds no tab"),
        })));
    }
    if args.json {
        return super::print_json(&Report {
            source: label,
            output: &args.output,
            format: rescued.format,
            file_size: rescued.file_size,
            damaged: rescued.damage.is_some(),
            damage: rescued.damage.as_ref(),
            recovered: &rescued.summary,
            dropped: &rescued.dropped,
        });
    }
    print_text(&label, &args.output, &rescued)?;
    Ok(())
}

/// The snapshot id SOURCE names, if it names one ([`naming::parse`]).
fn snapshot_id(source: &str) -> Result<Option<SnapshotId>> {
    Ok(match naming::parse(source, Takes::default())? {
        Named::Snapshot(id) => Some(id),
        _ => None,
    })
}

/// Rescue a snapshot's stored content.
fn load_snapshot(global: &GlobalArgs, id: SnapshotId) -> Result<(String, Rescued)> {
    let config = global.config()?;
    let store = super::open_existing_store(&global.chosen_store_dir(&config)?, false)?;
    let info = store.snapshot(id)?;
    let bytes = store.read_content(id)?;
    let label = format!("snapshot #{id} ({})", info.file_name);
    Ok((label.clone(), rescue::rescue(label, &bytes)?))
}

fn print_text(label: &str, output: &Path, r: &Rescued) -> io::Result<()> {
    let mut out = io::stdout().lock();
    let s = &r.summary;
    match &r.damage {
        None => writeln!(
            out,
            "{label}: not damaged; written as it is to {}",
            output.display()
        )?,
        Some(d) => {
            let expected = d
                .json_expected
                .map(|e| format!(" of {}", fmt::size(e)))
                .unwrap_or_default();
            writeln!(
                out,
                "{label}: damaged at byte {} of {} ({}%): {}",
                d.file_offset, r.file_size, d.file_percent, d.reason
            )?;
            writeln!(
                out,
                "readable:  {} of session JSON{expected} ({}%); trusted: {}",
                fmt::size(d.json_offset),
                d.json_percent,
                fmt::size(d.kept_json_bytes)
            )?;
        }
    }
    writeln!(
        out,
        "recovered: {} window{}, {} tab{} ({} pinned), {} closed tab{}, {} closed window{} ({} tabs)",
        s.windows,
        plural(s.windows),
        s.tabs,
        plural(s.tabs),
        s.pinned_tabs,
        s.closed_tabs,
        plural(s.closed_tabs),
        s.closed_windows,
        plural(s.closed_windows),
        s.closed_window_tabs
    )?;
    if !r.dropped.is_empty() {
        writeln!(out, "dropped (cut by the damage): {}", r.dropped.join(", "))?;
    }
    if r.damage.is_some() {
        writeln!(
            out,
            "everything after the damage is lost; an older session file or snapshot may hold it ({}, {})",
            crate::context::quoted(&["profiles"]),
            crate::context::quoted(&["list"])
        )?;
    }
    writeln!(out, "written:   {}", output.display())?;
    let output = crate::context::absolute(output);
    writeln!(
        out,
        "next:      {} to look at it; to open it, quit Firefox and run {} (the current session is backed up first, so it can be undone)",
        crate::context::quoted(&["tabs", &output]),
        crate::context::quoted(&["restore", &output])
    )?;
    out.flush()
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
