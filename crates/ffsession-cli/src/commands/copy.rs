//! `ffsession copy --to LOCATION`: send the local snapshots a remote store
//! lacks, encrypted.

use std::io::{self, Write};

use anyhow::Result;
use clap::Args;
use ffsession::remote::{copy_to_remote, CopyProgress, CopyReport};
use ffsession::store::Store;

use crate::cli::GlobalArgs;
use crate::config::Config;
use crate::fmt;
use crate::remote;

/// Copy the store's snapshots to a remote store, encrypted, so that a dead
/// disk or a lost laptop loses nothing.
///
/// LOCATION is a folder (a USB disk, a NAS mount), sftp://[user@]host[:port]/path
/// (your own SSH set-up: ~/.ssh/config, keys, the agent, known_hosts; a path
/// starting with // is absolute), s3://bucket/prefix (keys from AWS_ACCESS_KEY_ID
/// and AWS_SECRET_ACCESS_KEY, the endpoint from AWS_ENDPOINT_URL or the config),
/// webdav://host/path or webdavs://host/path (password from
/// FFSESSION_WEBDAV_PASSWORD), or the name of a [remotes.NAME] table in the
/// config file.
///
/// Only what the remote lacks travels: chunks, then content records, then
/// snapshot records, so a copy cut short (a crash, a lost connection) leaves
/// the remote readable and the next copy finishes the job. Everything is
/// encrypted on this machine with age, to a key that only the password opens
/// (FFSESSION_PASSWORD, --password-file, or a prompt): the server sees sizes
/// and times, never a URL or a title. A location with nothing in it becomes
/// a new remote store (the password is asked twice). Several machines may
/// copy into one remote; each snapshot carries its machine (an identity made
/// once, kept in the config folder, and the host name) and profile. Before
/// it says "copied", it checks the remote holds everything the copied
/// snapshots need, and sends again what a prune elsewhere removed meanwhile.
/// A chunk the remote lost, or one `check --read-data` found damaged, is sent
/// again.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession copy --to /media/usb/ffsession          a USB disk
  ffsession copy --to sftp://me@nas.local/ffsession  your NAS, over SSH
  ffsession copy --to s3://my-bucket/ffsession       S3 or any S3-compatible service
  ffsession copy --to nas                           the remote [remotes.nas] in the config
  ffsession --store sftp://me@nas.local/ffsession list    what the remote holds
  ffsession restore latest --store sftp://me@nas.local/ffsession --profile ~/new-profile")]
pub struct CopyArgs {
    /// The remote store: a location or a [remotes.NAME] of the config file
    #[arg(long, value_name = "LOCATION|NAME")]
    pub to: String,

    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(global: &GlobalArgs, args: CopyArgs) -> Result<()> {
    let config = global.config()?;
    let dir = local_store_dir(global, &config)?;
    let store = super::open_existing_store(&dir, false)?;
    let report = copy(global, &config, &store, &args.to, true)?;
    if args.json {
        return super::print_json(&report);
    }
    let mut out = io::stdout().lock();
    let t = remote::target(&args.to, &config)?;
    writeln!(
        out,
        "copied {} to {} ({}, {} sent); {} there already",
        fmt::count(report.snapshots_sent as usize, "snapshot", "snapshots"),
        t.location,
        fmt::count(report.chunks_sent as usize, "chunk", "chunks"),
        fmt::size(report.bytes_sent),
        report.snapshots_present
    )?;
    if report.healed > 0 {
        writeln!(
            out,
            "sent again {} the remote had lost or held damaged",
            fmt::count(report.healed as usize, "object", "objects")
        )?;
    }
    if report.resent > 0 {
        writeln!(
            out,
            "sent again {} removed from the remote while this copy ran (a prune elsewhere); every snapshot copied is there now",
            fmt::count(report.resent as usize, "object", "objects")
        )?;
    }
    for (id, why) in &report.skipped {
        writeln!(out, "skipped snapshot {id}: {}", fmt::escape(why))?;
    }
    out.flush()?;
    Ok(())
}

/// The local store copies read from: `--store` or the config's `store` when
/// they are a local folder, else the profile's store.
fn local_store_dir(global: &GlobalArgs, config: &Config) -> Result<std::path::PathBuf> {
    if let Some(dir) = global.store.clone().or_else(|| config.store.clone()) {
        if !remote::is_remote(&dir, config) {
            return Ok(dir);
        }
    }
    let profile = global.profile()?;
    global.data_store_dir(&profile)
}

/// Copy `store` to the remote `to` names; `interactive` false never prompts.
pub fn copy(
    global: &GlobalArgs,
    config: &Config,
    store: &Store,
    to: &str,
    interactive: bool,
) -> Result<CopyReport> {
    let t = remote::target(to, config)?;
    let (r, created) = remote::open(global, &t, true, interactive)?;
    if created && interactive {
        let _ = writeln!(
            io::stderr().lock(),
            "ffsession: created a remote store at {} (keep the password: without it nothing there can be read)",
            t.location
        );
    }
    // One damaged key file never loses the remote: this machine, which
    // knows the key, keeps two intact copies of it there.
    let repaired = r.repair_keys().map_err(remote::remote_error)?;
    if repaired > 0 {
        crate::ui::note(format_args!(
            "wrote {} of the remote's key to {} (it held fewer than two intact copies)",
            fmt::count(repaired as usize, "copy", "copies"),
            t.location
        ));
    }
    // What this machine's check found damaged, and what any machine's check
    // noted on the remote: sent again where this machine has it.
    let mut heal = remote::damaged_names(&t.location);
    let noted = ffsession::remote::noted_damage(&r).map_err(remote::remote_error)?;
    heal.extend(noted.iter().map(|(_, name)| name.clone()));
    let bar = remote::bar("sending {bar:40} {pos}/{len} objects {msg}");
    let mut sent_bytes = 0u64;
    let machine = remote::machine(config)?;
    let report = copy_to_remote(
        store,
        &r,
        &machine,
        &heal,
        super::now_ms(),
        &mut |p| match p {
            CopyProgress::Planned { objects } => bar.set_length(objects),
            CopyProgress::Sent { bytes } => {
                sent_bytes += bytes;
                bar.set_message(fmt::size(sent_bytes));
                bar.inc(1);
            }
        },
    );
    bar.finish_and_clear();
    let report = report.map_err(remote::remote_error)?;
    if !heal.is_empty() {
        remote::set_damaged_names(&t.location, &Default::default())?;
    }
    let sent: std::collections::HashSet<&String> = report.healed_names.iter().collect();
    let cleared: Vec<String> = noted
        .into_iter()
        .filter(|(_, name)| sent.contains(name))
        .map(|(record, _)| record)
        .collect();
    ffsession::remote::clear_damage(&r, &cleared).map_err(remote::remote_error)?;
    Ok(report)
}
