//! Who a machine is: an identity made once, at random, and kept (the CLI
//! keeps it beside its config file), and a label for people (the host
//! name, or the config's `host`). Two machines may carry one label (a
//! distribution's default host name, two accounts on one family computer,
//! a config file copied between laptops); they never share an identity.
//!
//! Everything that must tell machines apart on a shared remote goes by the
//! identity: whose lock a dead process left, the machine whose newest
//! session retention keeps, whose `latest` a restore takes. Records made
//! before identities existed carry only a label; they are attributed to
//! that label ([`MachineKey`]).

use std::io::{self, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{IoResultExt, PathError};

/// A machine: its identity and its label.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    /// Made once at random: 32 hex digits.
    pub id: String,
    /// What people call it (the host name), shown beside the identity.
    pub label: String,
}

/// The length of a machine identity in hex digits.
const ID_LEN: usize = 32;

impl Machine {
    /// A machine with a new random identity.
    pub fn new(label: impl Into<String>) -> Machine {
        Machine {
            id: new_id(),
            label: label.into(),
        }
    }

    /// The machine whose identity is kept in `path` (one line of 32 hex
    /// digits), made and kept there (0600, atomically) if the file does not
    /// exist yet. A file that holds anything else is an error: a machine
    /// that silently took a new identity would look like a new machine to
    /// every remote.
    pub fn load_or_create(path: &Path, label: impl Into<String>) -> Result<Machine, PathError> {
        let label = label.into();
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let id = text.trim();
                if valid_id(id) {
                    return Ok(Machine {
                        id: id.to_owned(),
                        label,
                    });
                }
                Err(PathError {
                    path: path.to_path_buf(),
                    source: io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!(
                            "not a machine identity (one line of {ID_LEN} hex digits); remove the file to give this machine a new one"
                        ),
                    ),
                })
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let machine = Machine::new(label);
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    let mut b = std::fs::DirBuilder::new();
                    b.recursive(true);
                    #[cfg(unix)]
                    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
                    b.create(dir).with_path(dir)?;
                }
                let line = format!("{}\n", machine.id);
                crate::fs_util::write_atomic(path, |w: &mut dyn Write| {
                    w.write_all(line.as_bytes())
                })?;
                // Another process may have made one at the same moment:
                // the file that stands is the identity.
                Machine::load_or_create(path, machine.label)
            }
            Err(e) => Err(e).with_path(path),
        }
    }

    /// The identity's first 8 digits, to tell two machines of one label
    /// apart on screen.
    pub fn short_id(&self) -> &str {
        short(&self.id)
    }

    /// The key snapshots of this machine are grouped under.
    pub fn key(&self) -> MachineKey {
        MachineKey::Id(self.id.clone())
    }
}

/// The first 8 digits of an identity.
pub fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// True for a well-formed identity.
pub fn valid_id(id: &str) -> bool {
    id.len() == ID_LEN && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A new random identity.
fn new_id() -> String {
    let mut bytes = [0u8; ID_LEN / 2];
    if getrandom::fill(&mut bytes).is_err() {
        // No system randomness (never seen): a digest of what differs
        // between two machines and two moments.
        let mut h = blake3::Hasher::new();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        h.update(&now.to_le_bytes());
        h.update(&std::process::id().to_le_bytes());
        h.update(std::env::temp_dir().to_string_lossy().as_bytes());
        bytes.copy_from_slice(&h.finalize().as_bytes()[..ID_LEN / 2]);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whose a snapshot is, for everything that groups by machine: its
/// machine's identity, or, for a record made before identities, the label
/// it carries (two machines of one label are one there: nothing else
/// tells them apart).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum MachineKey {
    /// A machine identity.
    Id(String),
    /// Only a label (a record made before identities).
    Label(String),
}

impl MachineKey {
    /// The key of a record that carries `id` (if any) and `label`.
    pub fn of(id: Option<&str>, label: &str) -> MachineKey {
        match id {
            Some(id) => MachineKey::Id(id.to_owned()),
            None => MachineKey::Label(label.to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_identity_is_made_once_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config/machine-id");
        let a = Machine::load_or_create(&path, "laptop").unwrap();
        assert!(valid_id(&a.id), "{}", a.id);
        let b = Machine::load_or_create(&path, "renamed").unwrap();
        assert_eq!(a.id, b.id);
        assert_eq!(b.label, "renamed");
        // Two machines of one label are two machines.
        let other = dir.path().join("other/machine-id");
        let c = Machine::load_or_create(&other, "laptop").unwrap();
        assert_ne!(a.id, c.id);
        assert_ne!(a.key(), c.key());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "{mode:o}");
        }
    }

    #[test]
    fn a_damaged_identity_file_is_an_error_not_a_new_machine() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("machine-id");
        std::fs::write(&path, "not an id\n").unwrap();
        let e = Machine::load_or_create(&path, "laptop").unwrap_err();
        assert!(e.to_string().contains("not a machine identity"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "not an id\n");
    }

    #[test]
    fn records_without_an_identity_go_by_their_label() {
        assert_eq!(
            MachineKey::of(None, "laptop"),
            MachineKey::Label("laptop".into())
        );
        let id = "0123456789abcdef0123456789abcdef";
        assert_eq!(
            MachineKey::of(Some(id), "laptop"),
            MachineKey::Id(id.into())
        );
    }
}
