//! Whose session `restore latest` takes from a remote store several
//! machines copy to: this machine's and this profile's newest, unless
//! `--from-machine HOST` or `--any-machine` says otherwise. The remote's
//! local copy records where each snapshot was taken (`Store::origins`); a
//! store without that (a local one) is one machine's.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Result;
use ffsession::profile::Profile;
use ffsession::store::{Origin, SnapshotId, SnapshotInfo, Store};

use crate::config::Config;
use crate::error::UserError;
use crate::fmt;

/// The snapshots `restore latest` chooses among.
pub struct Whose {
    /// Every snapshot (`None`), or those of these ids.
    only: Option<BTreeSet<SnapshotId>>,
}

impl Whose {
    /// Whether `snapshot` is among them.
    pub fn keeps(&self, snapshot: &SnapshotInfo) -> bool {
        self.only
            .as_ref()
            .is_none_or(|ids| ids.contains(&snapshot.id))
    }
}

/// The machine and profile whose newest session `restore latest` takes.
pub fn chosen(
    store: &Store,
    config: &Config,
    profile: &Profile,
    from_machine: Option<&str>,
    any_machine: bool,
) -> Result<Whose> {
    let origins: BTreeMap<SnapshotId, Origin> = store.origins()?;
    if any_machine || (origins.is_empty() && from_machine.is_none()) {
        return Ok(Whose { only: None });
    }
    let snapshots = store.snapshots()?;
    let host_of = |s: &SnapshotInfo| origins.get(&s.id).map(|o| o.host.as_str());
    // Each machine with its number of snapshots, for the messages.
    let mut machines: BTreeMap<&str, usize> = BTreeMap::new();
    for s in &snapshots {
        if let Some(h) = host_of(s) {
            *machines.entry(h).or_default() += 1;
        }
    }
    let listed = || {
        machines
            .iter()
            .map(|(h, n)| format!("{} ({n})", fmt::escape(h)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let this = crate::remote::host_name(config);
    let host = from_machine.unwrap_or(&this);
    if !machines.contains_key(host) {
        let what = match from_machine {
            Some(h) => format!("no snapshot of machine {:?} in this store", h),
            None => format!(
                "no snapshot of this machine ({}) in this store",
                fmt::escape(&this)
            ),
        };
        return Err(UserError::with_hint(
            if machines.is_empty() {
                format!("{what}: it records no machine")
            } else {
                format!("{what}; its snapshots come from {}", listed())
            },
            "pass --from-machine HOST to take that machine's newest session, or --any-machine for the newest of all",
        ));
    }
    let of_host: Vec<&SnapshotInfo> = snapshots
        .iter()
        .filter(|s| host_of(s) == Some(host))
        .collect();
    // This profile's, when the machine backed up one of its name; else the
    // machine's only profile.
    let profiles: BTreeSet<&str> = of_host.iter().map(|s| s.profile.as_str()).collect();
    let name = if profiles.contains(profile.name.as_str()) {
        profile.name.as_str()
    } else if let [only] = profiles.iter().copied().collect::<Vec<_>>()[..] {
        only
    } else {
        return Err(UserError::with_hint(
            format!(
                "machine {} backed up several profiles ({}), none named {:?}",
                fmt::escape(host),
                profiles.iter().copied().collect::<Vec<_>>().join(", "),
                profile.name
            ),
            "restore one snapshot by its number from `ffsession list`",
        ));
    };
    Ok(Whose {
        only: Some(
            of_host
                .into_iter()
                .filter(|s| s.profile == name)
                .map(|s| s.id)
                .collect(),
        ),
    })
}
