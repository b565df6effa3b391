//! Whose session `restore latest` takes from a remote store several
//! machines copy to: this machine's and this profile's newest, unless
//! `--from-machine NAME` or `--any-machine` says otherwise. The remote's
//! local copy records where each snapshot was taken, by machine identity
//! (`Store::origins`); a store without that (a local one) is one machine's.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Result;
use ffsession::machine::MachineKey;
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

/// One machine of a store, as `restore latest` and its messages name it.
struct Known<'a> {
    key: MachineKey,
    label: &'a str,
    snapshots: usize,
}

impl Known<'_> {
    /// `laptop (3f2a9c1e)`, or `laptop` for a machine known by its label only.
    fn name(&self) -> String {
        match &self.key {
            MachineKey::Id(id) => format!(
                "{} ({})",
                fmt::escape(self.label),
                ffsession::machine::short(id)
            ),
            MachineKey::Label(_) => fmt::escape(self.label).to_string(),
        }
    }
}

/// The machine and profile whose newest session `restore latest` takes.
///
/// A machine is its identity (`list` shows `laptop (3f2a9c1e)`); snapshots
/// copied before identities carry only a label, and go with the machine of
/// that label. `--from-machine` takes an identity (or its first digits) or
/// a label; a label two machines carry is refused, naming both.
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
    // Each machine with its number of snapshots, for the messages.
    let mut machines: Vec<Known> = Vec::new();
    for s in &snapshots {
        let Some(o) = origins.get(&s.id) else {
            continue;
        };
        let key = o.machine_key();
        match machines.iter_mut().find(|m| m.key == key) {
            Some(m) => m.snapshots += 1,
            None => machines.push(Known {
                key,
                label: &o.host,
                snapshots: 1,
            }),
        }
    }
    let listed = || {
        machines
            .iter()
            .map(|m| format!("{} ({})", m.name(), m.snapshots))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let this = crate::remote::machine(config)?;
    // The machines asked for: this one (its identity, and the snapshots of
    // its label copied before identities), or those `--from-machine` names.
    let wanted: Vec<&Known> = match from_machine {
        None => {
            let mine: Vec<&Known> = machines
                .iter()
                .filter(|m| m.key == this.key() || m.key == MachineKey::Label(this.label.clone()))
                .collect();
            if mine.is_empty() {
                // A new machine (a new identity) with the name of one that
                // copied here: most often that machine's replacement. Its
                // newest is taken, and said so; two of that name are
                // refused below.
                let named: Vec<&Known> =
                    machines.iter().filter(|m| m.label == this.label).collect();
                if let [only] = named[..] {
                    crate::ui::note(format_args!(
                        "this machine ({} {}) has no snapshot here; taking the newest of {}, the one machine of its name (--from-machine chooses another)",
                        fmt::escape(&this.label),
                        this.short_id(),
                        only.name()
                    ));
                }
                named
            } else {
                mine
            }
        }
        Some(asked) => {
            let by_id: Vec<&Known> = machines
                .iter()
                .filter(|m| {
                    matches!(&m.key, MachineKey::Id(id) if asked.len() >= 4 && id.starts_with(&asked.to_ascii_lowercase()))
                })
                .collect();
            if by_id.is_empty() {
                machines.iter().filter(|m| m.label == asked).collect()
            } else {
                by_id
            }
        }
    };
    let ids = wanted
        .iter()
        .filter(|m| matches!(m.key, MachineKey::Id(_)))
        .count();
    if ids > 1 {
        return Err(UserError::with_hint(
            format!(
                "{} machines here are called {:?}: {}",
                ids,
                from_machine.unwrap_or(&this.label),
                wanted
                    .iter()
                    .map(|m| format!("{} ({})", m.name(), m.snapshots))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "pass --from-machine with the identity `list` shows in brackets (its first digits are enough)",
        ));
    }
    if wanted.is_empty() {
        let what = match from_machine {
            Some(h) => format!("no snapshot of machine {h:?} in this store"),
            None => format!(
                "no snapshot of this machine ({} {}) in this store",
                fmt::escape(&this.label),
                this.short_id()
            ),
        };
        return Err(UserError::with_hint(
            if machines.is_empty() {
                format!("{what}: it records no machine")
            } else {
                format!("{what}; its snapshots come from {}", listed())
            },
            "pass --from-machine NAME (a host name, or the identity `list` shows in brackets) to take that machine's newest session, or --any-machine for the newest of all",
        ));
    }
    let keys: BTreeSet<&MachineKey> = wanted.iter().map(|m| &m.key).collect();
    let of_machine: Vec<&SnapshotInfo> = snapshots
        .iter()
        .filter(|s| {
            origins
                .get(&s.id)
                .is_some_and(|o| keys.contains(&o.machine_key()))
        })
        .collect();
    let shown = wanted
        .iter()
        .map(|m| m.name())
        .collect::<Vec<_>>()
        .join(" and ");
    // This profile's, when the machine backed up one of its name; else the
    // machine's only profile.
    let profiles: BTreeSet<&str> = of_machine.iter().map(|s| s.profile.as_str()).collect();
    let name = if profiles.contains(profile.name.as_str()) {
        profile.name.as_str()
    } else if let [only] = profiles.iter().copied().collect::<Vec<_>>()[..] {
        only
    } else {
        return Err(UserError::with_hint(
            format!(
                "machine {shown} backed up several profiles ({}), none named {:?}",
                profiles.iter().copied().collect::<Vec<_>>().join(", "),
                profile.name
            ),
            format!(
                "restore one snapshot by its number from {}",
                crate::context::quoted(&["list"])
            ),
        ));
    };
    Ok(Whose {
        only: Some(
            of_machine
                .into_iter()
                .filter(|s| s.profile == name)
                .map(|s| s.id)
                .collect(),
        ),
    })
}
