//! `ffsession stores`: the backup stores in the data directory.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use ffsession::store::Store;
use serde::Serialize;

use crate::cli::GlobalArgs;
use crate::fmt;

/// List the backup stores in the data directory (one per browser profile):
/// where each is, the profile folder it backs up and whose (the browser's),
/// how many snapshots it holds, the newest, and its size.
///
/// Every store command works on a store alone with --store DIR, with no
/// Firefox installed: a store copied from an old machine is listed, searched
/// and restored from that way.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession stores
  ffsession stores /mnt/backup             stores copied to another folder
  ffsession --store /mnt/backup/default-release list")]
pub struct StoresArgs {
    /// Folder holding stores [default: ~/.local/share/ffsession,
    /// ~/Library/Application Support/ffsession or %LOCALAPPDATA%\ffsession\data]
    pub dir: Option<PathBuf>,

    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct StoreRow {
    path: PathBuf,
    name: String,
    snapshots: Option<u64>,
    newest_ms: Option<u64>,
    profile: Option<String>,
    /// The profile folder the store backs up (`<store>/profile`), if named.
    profile_folder: Option<PathBuf>,
    /// The browser whose profile that folder is (`Firefox`, `Zen
    /// (Flatpak)`), when it is in one of the places browsers keep
    /// profiles.
    browser: Option<String>,
    stored_bytes: Option<u64>,
    /// A store (it has chunks/) whose catalog.sqlite is gone: its snapshots
    /// cannot be listed until the catalog is put back.
    catalog_missing: bool,
    error: Option<String>,
}

pub fn run(global: &GlobalArgs, args: StoresArgs) -> Result<()> {
    let root = match args.dir {
        Some(dir) => dir,
        None => global.stores_root()?,
    };
    let mut rows = stores_in(&root)?;
    // Whose each is: the browser whose profiles.ini lists its folder, or
    // whose folder holds it.
    if let Ok(roots) = global.firefox_roots() {
        let paths: Vec<PathBuf> = roots.iter().map(|r| r.path.clone()).collect();
        let listed = ffsession::profile::list_roots(&paths).unwrap_or_default();
        for row in &mut rows {
            let Some(folder) = &row.profile_folder else {
                continue;
            };
            let root = listed
                .iter()
                .find(|(_, p)| ffsession::fs_util::same_file(&p.path, folder))
                .map(|(r, _)| *r)
                .or_else(|| roots.iter().position(|r| folder.starts_with(&r.path)));
            row.browser = root.map(|r| roots[r].label());
        }
    }
    if args.json {
        return super::print_json(&rows);
    }
    print_rows(&root, &rows)?;
    Ok(())
}

/// The stores in `root` (folders holding a catalog, or chunk files without
/// one), by name.
fn stores_in(root: &Path) -> Result<Vec<StoreRow>> {
    let mut rows = Vec::new();
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(rows),
        Err(e) => {
            return Err(ffsession::PathError {
                path: root.to_path_buf(),
                source: e,
            }
            .into())
        }
    };
    for entry in entries.flatten() {
        let path = entry.path();
        // Without following links: a store is a real folder of its own.
        let exists = |name: &str| std::fs::symlink_metadata(path.join(name)).is_ok();
        let catalog_missing = !exists("catalog.sqlite");
        if catalog_missing && !exists("chunks") {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let profile_folder = ffsession::store::owner::bound_profile(&path);
        rows.push(match describe(&path) {
            Ok((snapshots, newest_ms, profile, stored_bytes)) => StoreRow {
                path,
                name,
                snapshots: Some(snapshots),
                newest_ms,
                profile,
                profile_folder,
                browser: None,
                stored_bytes: Some(stored_bytes),
                catalog_missing,
                error: None,
            },
            Err(e) => StoreRow {
                path,
                name,
                snapshots: None,
                newest_ms: None,
                profile: None,
                profile_folder,
                browser: None,
                stored_bytes: None,
                catalog_missing,
                error: Some(e.to_string()),
            },
        });
    }
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(rows)
}

/// Snapshots, newest snapshot time, its profile, stored bytes.
fn describe(
    dir: &Path,
) -> Result<(u64, Option<u64>, Option<String>, u64), ffsession::store::StoreError> {
    let store = Store::open_read_only(dir)?;
    let snapshots = store.snapshots()?;
    let stats = store.stats()?;
    let newest = snapshots.first();
    Ok((
        snapshots.len() as u64,
        newest.map(|s| s.taken_at_ms),
        newest.map(|s| s.profile.clone()),
        stats.chunk_stored_bytes + stats.catalog_bytes,
    ))
}

fn print_rows(root: &Path, rows: &[StoreRow]) -> io::Result<()> {
    let mut out = io::stdout().lock();
    if rows.is_empty() {
        writeln!(
            out,
            "no backup stores in {} (take a backup with {}, or name a store with --store DIR)",
            fmt::path(root),
            crate::context::quoted(&["backup"])
        )?;
        return out.flush();
    }
    for r in rows {
        match &r.error {
            Some(_) if r.catalog_missing => writeln!(
                out,
                "{:<24} CATALOG MISSING: catalog.sqlite is gone, so no snapshot can be listed or restored; put it back from a copy of the store ({} says more)",
                fmt::escape(&r.name),
                crate::context::quoted_at(&crate::context::absolute(&r.path), &["check"])
            )?,
            Some(e) => writeln!(
                out,
                "{:<24} UNREADABLE: {}",
                fmt::escape(&r.name),
                fmt::escape(e)
            )?,
            None if r.snapshots == Some(0) => writeln!(
                out,
                "{:<24} {:>6} snapshots  empty  {}",
                fmt::escape(&r.name),
                0,
                fmt::size(r.stored_bytes.unwrap_or(0)),
            )?,
            None => writeln!(
                out,
                "{:<24} {:>6} snapshots  newest {}  {}  (profile {})",
                fmt::escape(&r.name),
                r.snapshots.unwrap_or(0),
                fmt::local_time_or_unknown(r.newest_ms),
                fmt::size(r.stored_bytes.unwrap_or(0)),
                fmt::escape(r.profile.as_deref().unwrap_or("?"))
            )?,
        }
        writeln!(out, "  {}", fmt::path(&r.path))?;
        match (&r.profile_folder, &r.browser) {
            (Some(folder), Some(browser)) => {
                writeln!(out, "  backs up {} ({browser})", fmt::path(folder))?
            }
            (Some(folder), None) => writeln!(out, "  backs up {}", fmt::path(folder))?,
            (None, _) => {}
        }
    }
    writeln!(
        out,
        "use one with: ffsession --store {} list",
        fmt::path(
            &rows
                .iter()
                .find(|r| r.error.is_none())
                .unwrap_or(&rows[0])
                .path
        )
    )?;
    out.flush()
}
