//! `ffsession list`: the snapshots in the backup store, newest first.

use std::io::{self, Write};

use anyhow::Result;
use clap::Args;

use crate::cli::GlobalArgs;
use crate::fmt;

/// List the snapshots in the profile's backup store, newest session first
/// (by the session's own time, as `restore latest` chooses: an upgrade copy
/// backed up today is an old session): id, the
/// session's own last update ("session", Firefox's clock), the source file's
/// name, and windows and tabs or what is wrong with it. --long adds when each
/// was taken, the file's folder, and the bytes it added to the store. A
/// snapshot found not to read back whole (by a prune, a restore, watch or
/// check) is marked DAMAGED until a backup heals it. On a remote
/// (--store URL), each line ends with the machine the snapshot was taken on
/// and its id there: [laptop #42].
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession list                 one short line per snapshot
  ffsession list --long          also when each was taken, its folder, the bytes it added
  ffsession list --json          everything, for scripts")]
pub struct ListArgs {
    /// Also show when each snapshot was taken, the file's folder and the
    /// bytes it added to the store
    #[arg(long, short = 'l')]
    pub long: bool,

    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

/// A snapshot as `--json` lists it.
#[derive(serde::Serialize)]
struct Row<'a> {
    #[serde(flatten)]
    info: &'a ffsession::store::SnapshotInfo,
    /// Set when a chunk it uses was found damaged (until a backup heals it).
    #[serde(skip_serializing_if = "Option::is_none")]
    found_damaged: Option<&'a str>,
    /// In a remote's copy: the machine it was taken on and its id there.
    #[serde(skip_serializing_if = "Option::is_none")]
    origin: Option<&'a ffsession::store::Origin>,
}

pub fn run(global: &GlobalArgs, args: ListArgs) -> Result<()> {
    let config = global.config()?;
    let store = super::open_existing_store(&global.chosen_store_dir(&config)?, false)?;
    // In the order `restore latest` reads them, not by id or backup time.
    let snapshots = ffsession::restore::newest_first(&store)?;
    // Snapshots a prune, restore, watch or check found not to read back whole.
    let marks = store.damage_marks()?;
    // In a remote's copy: where each snapshot was taken, and its id there.
    let origins = store.origins()?;
    if args.json {
        let rows: Vec<Row<'_>> = snapshots
            .iter()
            .map(|info| Row {
                info,
                found_damaged: marks.get(&info.id).map(String::as_str),
                origin: origins.get(&info.id),
            })
            .collect();
        return super::print_json(&rows);
    }
    let mut out = io::stdout().lock();
    if snapshots.is_empty() {
        match global.remote_store(&config) {
            Some(remote) => writeln!(
                out,
                "no snapshots yet on {} (send this machine's with {})",
                fmt::escape(&remote),
                global.quoted(&["copy", "--to", &remote])
            )?,
            None => writeln!(
                out,
                "no snapshots yet in {} (take one with {})",
                fmt::path(store.dir()),
                global.quoted(&["backup"])
            )?,
        }
    }
    // Two machines of one label are told apart by their identities.
    let mut keys_of_label: std::collections::BTreeMap<&str, std::collections::BTreeSet<_>> =
        std::collections::BTreeMap::new();
    for o in origins.values() {
        keys_of_label
            .entry(o.host.as_str())
            .or_default()
            .insert(o.machine_key());
    }
    for s in &snapshots {
        let mut line = if args.long {
            fmt::snapshot_line(s)
        } else {
            fmt::snapshot_line_short(s)
        };
        if let Some(o) = origins.get(&s.id) {
            line.push_str(&format!(
                "  [{} on {}",
                fmt::escape(&s.profile),
                fmt::escape(&o.host)
            ));
            if let Some(id) = &o.machine {
                if keys_of_label.get(o.host.as_str()).map_or(0, |k| k.len()) > 1 {
                    line.push_str(&format!(" ({})", ffsession::machine::short(id)));
                }
            }
            if let Some(id) = o.id {
                line.push_str(&format!(" #{id}"));
            }
            line.push(']');
        }
        match marks.get(&s.id) {
            Some(what) => writeln!(out, "{line}  DAMAGED: {what}")?,
            None => writeln!(out, "{line}")?,
        }
    }
    out.flush()?;
    Ok(())
}
