//! `check` and `prune` when `--store` names a remote store.

use std::collections::HashSet;
use std::io::{self, Write};

use anyhow::Result;
use ffsession::remote::{check_remote, prune_remote, PruneOptions, RemoteCheckProgress};
use ffsession::retention::RetentionPolicy;

use crate::cli::GlobalArgs;
use crate::config::Config;
use crate::error::StoreDamaged;
use crate::fmt;
use crate::remote;

/// `check --store LOCATION [--read-data]`.
pub fn check(
    global: &GlobalArgs,
    config: &Config,
    value: &str,
    read_data: bool,
    json: bool,
) -> Result<()> {
    let t = remote::target(value, config)?;
    let (r, _) = remote::open(global, &t, false, true)?;
    if !json {
        writeln!(
            io::stdout().lock(),
            "checking remote store {}{}",
            t.location,
            if read_data {
                " (reading every chunk)"
            } else {
                ""
            }
        )?;
    }
    let bar = remote::bar("reading {bar:40} {pos}/{len} objects {msg}");
    let mut bytes = 0u64;
    let report = check_remote(&r, read_data, &mut |p| match p {
        RemoteCheckProgress::Planned { objects } => bar.set_length(objects),
        RemoteCheckProgress::Read { bytes: b } => {
            bytes += b;
            bar.set_message(fmt::size(bytes));
            bar.inc(1);
        }
    });
    bar.finish_and_clear();
    let report = report.map_err(remote::remote_error)?;
    // What this machine's copy saw on the remote that is gone with no prune
    // saying it removed it: lost since (rolled back, emptied, damaged).
    let cache = remote::cache_dir(&t.location)?.join("store");
    let missing = match ffsession::store::Store::open_read_only(&cache) {
        Ok(store) => {
            ffsession::remote::missing_on_remote(&r, &store).map_err(remote::remote_error)?
        }
        Err(_) => Vec::new(),
    };
    // Remembered for the next copy, which sends these objects again.
    let damaged: HashSet<String> = report
        .damaged_objects
        .iter()
        .map(|o| o.name.clone())
        .collect();
    remote::set_damaged_names(&t.location, &damaged)?;
    // Noted on the remote too, for the next copy of any machine that has
    // them; a remote this machine cannot write to keeps the note here only.
    if let Err(e) = ffsession::remote::note_damage(
        &r,
        &report.damaged_objects,
        &remote::host_name(config),
        super::now_ms(),
    ) {
        crate::ui::warning(format_args!(
            "cannot note the damage on {} ({}); only a copy from this machine sends it again",
            t.location, e
        ));
    }
    if json {
        #[derive(serde::Serialize)]
        struct Json<'a> {
            #[serde(flatten)]
            report: &'a ffsession::remote::RemoteCheckReport,
            /// Snapshots this machine's copy saw that the remote lost.
            missing_snapshots: Vec<&'a ffsession::store::SnapshotInfo>,
        }
        super::print_json(&Json {
            report: &report,
            missing_snapshots: missing.iter().collect(),
        })?;
    } else {
        let mut out = io::stdout().lock();
        for s in &missing {
            writeln!(
                out,
                "missing snapshot (#{} here) of {}: {}, session of {}, {} tabs: seen on the remote before, gone with no prune removing it",
                s.id,
                fmt::escape(&s.profile),
                fmt::escape(&s.file_name),
                fmt::local_time_or_unknown(Some(s.session_time_ms())),
                s.counts.map_or(0, |c| c.tabs)
            )?;
        }
        for o in &report.damaged_objects {
            writeln!(
                out,
                "error: {}/{}: {}",
                o.kind,
                o.name,
                fmt::escape(&o.reason)
            )?;
        }
        for o in &report.unreadable_objects {
            writeln!(
                out,
                "unreadable: {}/{}: {}",
                o.kind,
                o.name,
                fmt::escape(&o.reason)
            )?;
        }
        let snapshots = report
            .damaged_snapshots
            .iter()
            .map(|d| ("damaged", d))
            .chain(
                report
                    .unreadable_snapshots
                    .iter()
                    .map(|d| ("unreadable", d)),
            );
        for (what, d) in snapshots {
            match &d.record {
                Some(rec) => writeln!(
                    out,
                    "{what} snapshot {} of {} on {} ({}, taken {}): {}",
                    &d.name[..12],
                    fmt::escape(&rec.profile),
                    fmt::escape(&rec.host),
                    fmt::escape(&rec.source_name),
                    fmt::local_time_or_unknown(Some(rec.taken_at)),
                    fmt::escape(&d.reason)
                )?,
                None => writeln!(
                    out,
                    "{what} snapshot {}: {}",
                    &d.name[..12],
                    fmt::escape(&d.reason)
                )?,
            }
        }
        writeln!(
            out,
            "read {} snapshot records, {} content records{} ({} downloaded); {} unreferenced",
            report.snapshots,
            report.contents,
            if read_data {
                format!(", {} chunks", report.chunks_read)
            } else {
                format!("; {} chunks listed", report.chunks)
            },
            fmt::size(report.bytes_read),
            report.unreferenced
        )?;
        if report.contents_unnamed > 0 {
            writeln!(
                out,
                "{} no snapshot record names (a prune cut short leaves them, and so do snapshot records that went missing; {} removes them)",
                fmt::count(report.contents_unnamed as usize, "content record", "content records"),
                global.quoted_at(&t.label, &["prune"])
            )?;
        }
        if report.is_clean() && missing.is_empty() {
            writeln!(out, "no damage found")?;
        }
        out.flush()?;
    }
    if report.is_clean() && missing.is_empty() && report.is_complete() {
        Ok(())
    } else if report.is_clean() && missing.is_empty() {
        // A read that failed or hung is not damage: not noted on the
        // remote, and the remote is not proven whole either.
        Err(crate::error::UserError::with_hint(
            format!(
                "{}: {} could not be read ({} not proven whole); nothing found is damaged, but the remote is not proven whole",
                t.location,
                fmt::count(report.unreadable_objects.len(), "object", "objects"),
                fmt::count(report.unreadable_snapshots.len(), "snapshot", "snapshots"),
            ),
            format!(
                "the server failed those reads or did not answer them: run {} again; if they keep failing, look at those files on the server ({} from a machine that has the snapshots sends what the remote lacks)",
                global.quoted_at(&t.label, &["check", "--read-data"]),
                global.quoted(&["copy", "--to", &t.label])
            ),
        ))
    } else {
        Err(StoreDamaged(format!(
            "{}: {} damaged or missing, {} damaged, {} gone since this machine saw {}; the next {} from a machine that has them sends them again",
            t.location,
            fmt::count(report.damaged_objects.len(), "object", "objects"),
            fmt::count(report.damaged_snapshots.len(), "snapshot", "snapshots"),
            fmt::count(missing.len(), "snapshot", "snapshots"),
            if missing.len() == 1 { "it" } else { "them" },
            global.quoted(&["copy", "--to", &t.label])
        ))
        .into())
    }
}

/// `prune --store LOCATION`: under the remote's exclusive lock, the
/// policy planned over the remote's snapshots (read through the local
/// copy, brought up to date under the lock), its periods and promises
/// counted at the server's time; then those records removed, then what no
/// record names, in two passes `keep_unused` apart on the server's clock.
pub fn prune(
    global: &GlobalArgs,
    config: &Config,
    value: &str,
    policy: &RetentionPolicy,
    dry_run: bool,
    json: bool,
    keep_unused: PruneOptions,
) -> Result<()> {
    let t = remote::target(value, config)?;
    let (r, _) = remote::open(global, &t, false, true)?;
    let machine = remote::machine(config)?;
    // The lock first: what is planned is what the remote holds while no
    // copy runs, and "now" is the server's (this machine's clock may be
    // hours off). A dry run writes nothing: it plans at this machine's time.
    let mut lock = if dry_run {
        None
    } else {
        Some(
            r.lock(true, &machine, super::now_ms())
                .map_err(remote::remote_error)?,
        )
    };
    let now = lock
        .as_ref()
        .and_then(|l| l.server_now_ms())
        .unwrap_or_else(super::now_ms);
    let dir = remote::sync_cache(global, &t, &r)?;
    let mut store = super::open_existing_store_waiting(global, &dir)?;
    let (snapshots, plan) =
        ffsession::prune::plan_store(&store, policy, &crate::fmt::local_zone(), now)?;
    let removed: Vec<&ffsession::store::SnapshotInfo> = plan
        .removed()
        .filter_map(|id| snapshots.iter().find(|s| s.id.0 == id))
        .collect();
    if json && dry_run {
        return super::print_json(&plan);
    }
    if !json {
        let mut out = io::stdout().lock();
        // Every snapshot with what happens to it and why, as a local prune
        // prints its plan.
        super::prune::print_plan(&mut out, &snapshots, &plan)?;
        writeln!(
            out,
            "{} {} of {} on {}",
            if dry_run { "would remove" } else { "removing" },
            fmt::count(removed.len(), "snapshot", "snapshots"),
            snapshots.len(),
            t.location
        )?;
    }
    let Some(lock) = lock.as_mut() else {
        return Ok(());
    };
    let names: Vec<String> = removed.iter().map(|s| r.snapshot_name(s)).collect();
    let report = prune_remote(lock, &names, keep_unused).map_err(remote::remote_error)?;
    ffsession::prune::carry_out(&mut store, &plan)?;
    if json {
        return super::print_json(&report);
    }
    let mut err = io::stderr().lock();
    writeln!(
        err,
        "ffsession: removed {} snapshot records, {} content records, {} chunks and {} marks ({}) from {}",
        report.snapshots_removed,
        report.contents_removed,
        report.chunks_removed,
        report.marks_removed,
        fmt::size(report.bytes_freed),
        t.location
    )?;
    if report.unused_kept > 0 {
        writeln!(
            err,
            "ffsession: kept {} ({}) that no snapshot names for now: a prune removes them once they have been unused for {} by the server's clock, so a copy still sending from another machine never loses them ({} found now)",
            fmt::count(report.unused_kept as usize, "object", "objects"),
            fmt::size(report.unused_kept_bytes),
            fmt::duration(std::time::Duration::from_millis(report.keep_unused_ms)),
            report.unused_found
        )?;
    }
    if report.temporary_removed > 0 {
        writeln!(
            err,
            "ffsession: removed {} left by interrupted copies",
            fmt::count(
                report.temporary_removed as usize,
                "temporary file",
                "temporary files"
            )
        )?;
    }
    if let Some(why) = &report.kept_because {
        writeln!(err, "ffsession: warning: {why}")?;
    }
    Ok(())
}
