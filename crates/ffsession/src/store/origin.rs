//! Where a snapshot of a remote's local copy was taken: the machine, and
//! the snapshot's id in the store it was copied from. A sync writes one
//! small manifest per snapshot it imports, `origins/<local id>.json`
//! (sealed like every manifest), so `list` on a remote shows both ids and
//! the machine. A store that was never a remote's copy has none.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{manifest, SnapshotId, Store, StoreError};

/// The folder of origin manifests.
pub const ORIGINS_DIR: &str = "origins";

const ORIGIN_FORMAT: &str = "ffsession-origin/1";

/// Where a snapshot was taken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Origin {
    /// The machine's label (the copying machine's host name).
    pub host: String,
    /// Its id in the store it was copied from, when that store said.
    pub id: Option<SnapshotId>,
    /// The machine's identity ([`crate::machine::Machine`]); none for a
    /// snapshot copied before identities, which goes by its label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
}

impl Origin {
    /// The key this snapshot's machine is grouped under.
    pub fn machine_key(&self) -> crate::machine::MachineKey {
        crate::machine::MachineKey::of(self.machine.as_deref(), &self.host)
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct OriginManifest {
    format: String,
    snapshot: SnapshotId,
    origin: Origin,
}

impl Store {
    /// Record where each of these snapshots was taken (durably).
    pub fn record_origins(&self, origins: &[(SnapshotId, Origin)]) -> Result<(), StoreError> {
        self.writable()?;
        super::hygiene::refuse_writer_links(self.dir())?;
        for (id, origin) in origins {
            let path = self.dir().join(ORIGINS_DIR).join(format!("{id}.json"));
            manifest::write_sealed(
                self.dir(),
                ORIGINS_DIR,
                &path,
                &OriginManifest {
                    format: ORIGIN_FORMAT.into(),
                    snapshot: *id,
                    origin: origin.clone(),
                },
            )?;
        }
        Ok(())
    }

    /// Where each snapshot that has an origin manifest was taken. A file
    /// that does not read is left out.
    pub fn origins(&self) -> Result<BTreeMap<SnapshotId, Origin>, StoreError> {
        Ok(
            manifest::sealed_files::<OriginManifest>(self.dir(), ORIGINS_DIR)?
                .into_iter()
                .filter_map(|(_, m)| m.ok())
                .filter(|m| m.format == ORIGIN_FORMAT)
                .map(|m| (m.snapshot, m.origin))
                .collect(),
        )
    }
}
