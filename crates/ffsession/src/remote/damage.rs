//! Damage found on a remote, noted on the remote: what any machine's
//! `check` found missing or damaged, any machine's next copy sends again.
//!
//! `check` writes one record per damaged object, `damaged/<name>` (encrypted
//! like every object, named by a keyed digest of the object's kind and
//! name, so two machines noting the same damage write one object). A copy
//! reads them, sends again each object it has (as it does for the damage its
//! own machine's check found), and removes the records of what it sent. A
//! record that does not read is left alone (the next check writes it again).

use serde::{Deserialize, Serialize};

use super::backend::Kind;
use super::check::DamagedObject;
use super::crypto::Keys;
use super::{Remote, RemoteError};

const DAMAGED_FORMAT: &str = "ffsession-remote-damaged/1";

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DamagedRecord {
    format: String,
    /// `snapshots`, `contents` or `chunks`.
    kind: String,
    /// The object's name.
    name: String,
    /// What was wrong with it.
    reason: String,
    /// The machine whose check found it.
    host: String,
    /// When (ms since the epoch).
    found_at_ms: u64,
}

fn record_name(keys: &Keys, kind: &str, name: &str) -> String {
    let what = format!("{kind}/{name}");
    keys.name("damaged", blake3::hash(what.as_bytes()).as_bytes())
}

/// Note `objects` (found damaged or missing by a check) on the remote.
pub fn note_damage(
    remote: &Remote,
    objects: &[DamagedObject],
    host: &str,
    now_ms: u64,
) -> Result<(), RemoteError> {
    let mut items = Vec::new();
    for o in objects {
        let record = DamagedRecord {
            format: DAMAGED_FORMAT.into(),
            kind: o.kind.to_owned(),
            name: o.name.clone(),
            reason: o.reason.clone(),
            host: host.to_owned(),
            found_at_ms: now_ms,
        };
        let plain = serde_json::to_vec(&record).unwrap_or_default();
        items.push((
            Kind::Damaged,
            record_name(&remote.keys, o.kind, &o.name),
            remote.seal(&plain)?,
        ));
    }
    remote.backend.write_many(items, &mut |_| {})
}

/// The objects noted damaged on the remote: (record name, object name).
pub fn noted_damage(remote: &Remote) -> Result<Vec<(String, String)>, RemoteError> {
    let listed: Vec<String> = remote
        .backend
        .list(Kind::Damaged)?
        .into_iter()
        .map(|e| e.name)
        .collect();
    let got = remote.backend.read_many(
        listed.iter().map(|n| (Kind::Damaged, n.clone())).collect(),
        &mut |_| {},
    )?;
    let mut out = Vec::new();
    for (record, bytes) in listed.into_iter().zip(got) {
        let Ok(Some(bytes)) = bytes else { continue };
        let Ok(plain) = remote.open_object(Kind::Damaged, &record, &bytes) else {
            continue;
        };
        let Ok(r) = serde_json::from_slice::<DamagedRecord>(&plain) else {
            continue;
        };
        if r.format == DAMAGED_FORMAT && record_name(&remote.keys, &r.kind, &r.name) == record {
            out.push((record, r.name));
        }
    }
    Ok(out)
}

/// Remove the damage records `records` (their objects were sent again).
pub fn clear_damage(remote: &Remote, records: &[String]) -> Result<(), RemoteError> {
    for r in records {
        remote.backend.remove(Kind::Damaged, r)?;
    }
    Ok(())
}
