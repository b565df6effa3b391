//! `ffsession check`: verify the whole backup store, as `restic check
//! --read-data` does.

use std::io::{self, IsTerminal, Write};

use anyhow::Result;
use clap::Args;
use ffsession::store::{check_store, CheckReport};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cli::GlobalArgs;
use crate::error::{StoreDamaged, UserError};
use crate::fmt;

/// Check that every snapshot in the backup store can still be restored: all
/// the stored data is read back, and each snapshot is put together again and
/// compared with the session file it was taken from.
///
/// In detail: the store's folder and permissions, the catalog (SQLite's
/// integrity_check and its references, each snapshot's row against its
/// manifest), the tab index, every chunk file (read, decompressed, checked
/// against its BLAKE3 name), then every snapshot's content, compared with its
/// recorded size and hash.
///
/// Names each damaged snapshot (id, time, source file, which chunks and what
/// is wrong) and every symbolic link in the store (ffsession follows none),
/// and counts orphan chunk files and temporary files left by an interrupted
/// backup (harmless; `ffsession prune` removes them; --json lists them). Changes nothing, takes
/// no lock, follows no symbolic link. Exits 0 when the store is whole, 5 when
/// it is damaged. A damaged chunk is rewritten by the next `backup` of a
/// session that holds it. Shows a progress bar on stderr when stderr is a
/// terminal.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession check                   read and verify everything in the store
  ffsession check --json            the findings as JSON

Exit status: 0 the store is whole, 5 the store is damaged, 1 other errors (no store yet:
\"no backups yet\", as other commands say; a file that could not be read, or a remote
object whose read failed or hung: an I/O error is not damage).")]
pub struct CheckArgs {
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,

    /// On a remote store: download and verify every chunk too (a local
    /// store's chunks are always read)
    #[arg(long)]
    pub read_data: bool,
}

pub fn run(global: &GlobalArgs, args: CheckArgs) -> Result<()> {
    let config = global.config()?;
    if let Some(value) = global.remote_store(&config) {
        return super::remote_ops::check(global, &config, &value, args.read_data, args.json);
    }
    let dir = global.chosen_store_dir(&config)?;
    super::check_store_path(&dir)?;
    if super::no_store_yet(&dir) {
        return Err(super::no_backups_yet(&dir));
    }
    if !args.json {
        writeln!(io::stdout().lock(), "checking store {}", fmt::path(&dir))?;
    }
    let bar = ProgressBar::new(0);
    if io::stderr().is_terminal() && !crate::ui::quiet() {
        bar.set_draw_target(ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "reading chunks {bar:40} {bytes}/{total_bytes} ({bytes_per_sec}, {eta} left)",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
    } else {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    let report = check_store(&dir, &mut |done, total| {
        bar.set_length(total.max(done));
        bar.set_position(done);
    });
    bar.finish_and_clear();
    let report = report?;
    remember(&dir, &report);
    if args.json {
        super::print_json(&report)?;
    } else {
        print_text(&report, global)?;
    }
    if !report.is_whole() {
        Err(StoreDamaged(summary(&report)).into())
    } else if !report.is_complete() {
        Err(UserError::with_hint(
            format!(
                "{}: {} could not be read; nothing found is damaged, but the store is not proven whole",
                report.dir.display(),
                fmt::count(report.unreadable.len(), "file", "files")
            ),
            "an I/O error is not damage: check the disk (full, failing, or permissions) and run check again",
        ))
    } else {
        Ok(())
    }
}

/// Remember the outcome for `ffsession status`, in the store's state
/// folder (never in the store: check only reads it). A failure to write it
/// costs the check nothing.
fn remember(dir: &std::path::Path, r: &CheckReport) {
    let Some(state) = crate::folders::state_dir(dir) else {
        return;
    };
    let (outcome, summary) = if !r.is_whole() {
        ("damaged", format!("damaged: {}", summary(r)))
    } else if !r.is_complete() {
        (
            "unreadable",
            format!(
                "{} could not be read",
                fmt::count(r.unreadable.len(), "file", "files")
            ),
        )
    } else {
        (
            "whole",
            format!(
                "whole ({} read back)",
                fmt::count(r.snapshots as usize, "snapshot", "snapshots")
            ),
        )
    };
    let record = ffsession::watch::state::CheckRecord {
        at_ms: super::now_ms(),
        outcome: outcome.into(),
        summary,
        read_data: true,
    };
    let _ = record.save(&state.join("check.json"));
}

fn print_text(r: &CheckReport, global: &GlobalArgs) -> Result<()> {
    // Written whole, then with the commands it names completed.
    let mut out = Vec::new();
    // What is wrong, and what to do about it when the report says.
    let said = |p: &ffsession::store::StoreProblem| match &p.hint {
        Some(hint) => format!("{}; {}", fmt::escape(&p.what), global.word(hint)),
        None => fmt::escape(&p.what).into_owned(),
    };
    for p in &r.problems {
        writeln!(out, "error: {}: {}", fmt::path(&p.path), said(p))?;
    }
    for p in &r.warnings {
        writeln!(out, "warning: {}: {}", fmt::path(&p.path), said(p))?;
    }
    if r.loose_modes > 0 {
        writeln!(
            out,
            "(the next backup, or any command that writes to the store, makes them private; to do it now: chmod -R go-rwx {})",
            fmt::path(&r.dir)
        )?;
    }
    writeln!(
        out,
        "read {} ({} stored, {} of content) of {} in {}",
        fmt::count(r.chunks as usize, "chunk", "chunks"),
        fmt::size(r.stored_bytes),
        fmt::size(r.content_bytes),
        fmt::count(r.snapshots as usize, "snapshot", "snapshots"),
        fmt::count(r.contents as usize, "distinct content", "distinct contents"),
    )?;
    for c in &r.damaged_chunks {
        writeln!(
            out,
            "error: chunk {}: {}: {}",
            short(&c.digest.to_hex()),
            fmt::path(&c.path),
            fmt::escape(&c.what)
        )?;
    }
    for s in &r.damaged_snapshots {
        let chunks: Vec<String> = s.chunks.iter().map(|d| short(&d.to_hex())).collect();
        writeln!(
            out,
            "damaged: snapshot #{} {}  {}: {}{}",
            s.id,
            fmt::local_time_or_unknown(Some(s.taken_at_ms)),
            fmt::escape(&s.file_name),
            s.what,
            if chunks.is_empty() {
                String::new()
            } else {
                format!(" ({})", chunks.join(", "))
            }
        )?;
    }
    // Counted, not listed: killed backups can leave hundreds (--json lists
    // them).
    if !r.orphan_chunks.is_empty() {
        writeln!(
            out,
            "note: {} ({}) no catalog row names, left by interrupted backups; harmless, {} removes them",
            fmt::count(r.orphan_chunks.len(), "orphan chunk file", "orphan chunk files"),
            fmt::size(sizes(&r.orphan_chunks)),
            global.quoted(&["prune"])
        )?;
    }
    for p in &r.index_problems {
        writeln!(out, "error: {}: {}", fmt::path(&p.path), said(p))?;
    }
    for p in &r.unreadable {
        writeln!(out, "unreadable: {}: {}", fmt::path(&p.path), said(p))?;
    }
    if r.stale_manifests > 0 {
        writeln!(
            out,
            "note: {} no catalog row names (left by an interrupted backup or prune; {} removes them)",
            fmt::count(r.stale_manifests as usize, "manifest", "manifests"),
            global.quoted(&["prune"])
        )?;
    }
    if !r.temp_files.is_empty() {
        writeln!(
            out,
            "note: {} ({}) left by interrupted writes; harmless, {} removes them",
            fmt::count(r.temp_files.len(), "temporary file", "temporary files"),
            fmt::size(sizes(&r.temp_files)),
            global.quoted(&["prune"])
        )?;
    }
    if r.unreferenced_chunks > 0 {
        writeln!(
            out,
            "note: {} no snapshot uses any more ({} removes them)",
            fmt::count(r.unreferenced_chunks as usize, "chunk", "chunks"),
            global.quoted(&["prune"])
        )?;
    }
    if r.is_whole() && r.is_complete() {
        writeln!(out, "no errors were found")?;
    }
    let mut stdout = io::stdout().lock();
    stdout.write_all(&out)?;
    stdout.flush()?;
    Ok(())
}

/// The bytes of the files at `paths` (a link counts as itself).
fn sizes(paths: &[std::path::PathBuf]) -> u64 {
    paths
        .iter()
        .filter_map(|p| std::fs::symlink_metadata(p).ok())
        .map(|m| m.len())
        .sum()
}

/// The first 12 hex digits of a digest, as in `git log --oneline`.
fn short(hex: &str) -> String {
    hex[..12].to_owned()
}

/// One line for stderr: what is damaged, in numbers.
fn summary(r: &CheckReport) -> String {
    let mut parts = Vec::new();
    let links = r.links.len();
    if links > 0 {
        parts.push(format!(
            "{} (ffsession follows none: remove {}, see above)",
            fmt::count(links, "symbolic link", "symbolic links"),
            if links == 1 { "it" } else { "them" }
        ));
    }
    let writable = r.world_writable as usize;
    if writable > 0 {
        parts.push(format!(
            "{} anyone may write to (the next backup makes {} private)",
            fmt::count(writable, "file or folder", "files or folders"),
            if writable == 1 { "it" } else { "them" }
        ));
    }
    let other = r
        .problems
        .iter()
        .filter(|p| !r.links.contains(&p.path))
        .count()
        .saturating_sub(writable);
    if other > 0 {
        parts.push(fmt::count(
            other,
            "problem with the folder or catalog",
            "problems with the folder or catalog",
        ));
    }
    if !r.damaged_snapshots.is_empty() {
        parts.push(format!(
            "{} cannot be restored",
            fmt::count(r.damaged_snapshots.len(), "snapshot", "snapshots")
        ));
    }
    if !r.damaged_chunks.is_empty() {
        parts.push(fmt::count(
            r.damaged_chunks.len(),
            "damaged chunk",
            "damaged chunks",
        ));
    }
    if !r.index_problems.is_empty() {
        parts.push(format!(
            "the tab index is damaged ({} builds it again)",
            crate::context::quoted(&["reindex"])
        ));
    }
    format!(
        "the store {} is damaged: {}",
        fmt::path(&r.dir),
        parts.join(", ")
    )
}
