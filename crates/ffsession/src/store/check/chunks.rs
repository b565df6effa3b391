//! Reading every chunk a snapshot needs, and every snapshot's content put
//! together: with the catalog, or (when it cannot be opened) with the
//! manifests alone.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::super::manifest;
use super::super::read::Recipe;
use super::{
    catalog, CheckProgress, CheckReport, ChunkProblem, DamagedSnapshot, Found, StoreProblem,
};
use crate::store::chunk::Digest;
use crate::store::{SnapshotInfo, Store, StoreError};

/// What reading one chunk file found.
pub(super) enum Verdict {
    /// It holds what its name says: the raw bytes.
    Whole(Vec<u8>),
    /// It is missing or damaged: what is wrong.
    Damaged(String),
    /// It could not be read (an I/O error): not damage.
    Unreadable(String),
}

/// Read and verify one chunk file; `raw_size` from the catalog or a
/// manifest, or `None` when there is neither (then the frame may be as large
/// as FastCDC's largest chunk). Returns the verdict and the bytes read.
pub(super) fn verify(
    found: Option<&Found>,
    digest: &Digest,
    raw_size: Option<usize>,
) -> (Verdict, u64) {
    let Some(found) = found else {
        return (Verdict::Damaged("missing".into()), 0);
    };
    if let Some(why) = &found.not_a_file {
        return (Verdict::Damaged(why.clone()), 0);
    }
    let packed = match fs::read(&found.path) {
        Ok(p) => p,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return (Verdict::Damaged("missing".into()), 0)
        }
        Err(e) => return (Verdict::Unreadable(format!("cannot be read: {e}")), 0),
    };
    let len = packed.len() as u64;
    let capacity = raw_size.unwrap_or(fastcdc::v2020::MAXIMUM_MAX);
    let raw = match zstd::bulk::decompress(&packed, capacity) {
        Ok(raw) => raw,
        Err(e) => {
            return (
                Verdict::Damaged(format!("does not decompress (zstd: {e})")),
                len,
            )
        }
    };
    if let Some(n) = raw_size {
        if raw.len() != n {
            return (
                Verdict::Damaged(format!("holds {} bytes, the catalog says {n}", raw.len())),
                len,
            );
        }
    }
    if Digest::of(&raw) != *digest {
        return (
            Verdict::Damaged("its content does not match its name (BLAKE3 digest)".into()),
            len,
        );
    }
    (Verdict::Whole(raw), len)
}

/// Without a catalog: every chunk file against its name, and every snapshot
/// a manifest records put together from its content's manifest.
pub(super) fn check_files_alone(
    report: &mut CheckReport,
    dir: &Path,
    files: HashMap<Digest, Found>,
    progress: CheckProgress<'_>,
) {
    let mut snapshots: Vec<SnapshotInfo> = Vec::new();
    for id in manifest::snapshot_ids(dir).unwrap_or_default() {
        if let Some(info) = manifest::read_snapshot(dir, id).ok().and_then(|m| m.info()) {
            snapshots.push(info);
        }
    }
    let mut recipes = Vec::new();
    for s in &snapshots {
        match manifest::read_content(dir, &s.content_hash) {
            Ok(m) => recipes.push((
                s.id,
                Ok(Recipe {
                    digest: s.content_hash,
                    size: m.size,
                    chunks: m.list().unwrap_or_default(),
                }),
            )),
            Err(why) => recipes.push((s.id, Err(format!("its content manifest is {why}")))),
        }
    }
    report.snapshots = snapshots.len() as u64;
    let used = check_contents(
        report,
        &snapshots,
        recipes,
        &files,
        &HashMap::new(),
        progress,
    );
    // The chunk files no manifest names: checked against their names.
    let mut rest: Vec<_> = files.iter().filter(|(d, _)| !used.contains(*d)).collect();
    rest.sort_by(|a, b| a.1.path.cmp(&b.1.path));
    for (digest, found) in rest {
        let (verdict, len) = verify(Some(found), digest, None);
        report.chunks += 1;
        report.stored_bytes += len;
        note_chunk(report, digest, &found.path, verdict);
    }
}

/// With the catalog: its pages and rows, each row against its manifest, the
/// contents put together (from the manifests where the catalog cannot say),
/// then the chunks no snapshot uses and the files no row names.
pub(super) fn check_with_catalog(
    store: &Store,
    report: &mut CheckReport,
    files: HashMap<Digest, Found>,
    progress: CheckProgress<'_>,
) -> Result<(), StoreError> {
    catalog::integrity(store, report);
    let snapshots = match store.snapshots() {
        Ok(s) => s,
        Err(e) => {
            report.problems.push(catalog::problem(
                store,
                format!("the snapshots cannot be listed: {e}"),
            ));
            store.snapshots_from_manifests().unwrap_or_default()
        }
    };
    report.snapshots = snapshots.len() as u64;
    catalog::rows_against_manifests(store, report, &snapshots);
    let cataloged = catalog::cataloged_chunks(store, report);
    let mut by_id: Vec<&SnapshotInfo> = snapshots.iter().collect();
    by_id.sort_by_key(|s| s.id);
    let recipes = by_id
        .iter()
        .map(|s| (s.id, store.recipe(s.id).map_err(|e| e.to_string())))
        .collect();
    let used = check_contents(report, &snapshots, recipes, &files, &cataloged, progress);
    catalog::contents_against_manifests(store, report);

    // Chunks the catalog lists that no snapshot uses: verified too (a later
    // backup may reuse them), and counted.
    let mut spare: Vec<(&Digest, &(u64, u64))> = cataloged
        .iter()
        .filter(|(d, _)| !used.contains(*d))
        .collect();
    spare.sort();
    report.unreferenced_chunks = spare.len() as u64;
    for (digest, &(raw, _)) in spare {
        let Some(found) = files.get(digest) else {
            continue;
        };
        let (verdict, len) = verify(Some(found), digest, usize::try_from(raw).ok());
        report.chunks += 1;
        report.stored_bytes += len;
        note_chunk(report, digest, &found.path, verdict);
    }
    let mut orphans: Vec<PathBuf> = files
        .iter()
        .filter(|(d, _)| !cataloged.contains_key(*d) && !used.contains(*d))
        .map(|(_, f)| f.path.clone())
        .collect();
    orphans.sort();
    report.orphan_chunks = orphans;
    report.stale_manifests = catalog::stale_manifests(store);
    Ok(())
}

/// Record what a chunk file outside any content was found to be.
fn note_chunk(report: &mut CheckReport, digest: &Digest, path: &Path, verdict: Verdict) {
    match verdict {
        Verdict::Whole(_) => {}
        Verdict::Damaged(what) => report.damaged_chunks.push(ChunkProblem {
            digest: *digest,
            path: path.to_path_buf(),
            what,
        }),
        Verdict::Unreadable(what) => report.unreadable.push(StoreProblem {
            path: path.to_path_buf(),
            what,
            hint: None,
        }),
    }
}

/// Put every content together (in id order of the snapshots, so the chunks
/// consecutive contents share are read once) and name the snapshots that
/// cannot be restored. Returns the chunks the contents use.
fn check_contents(
    report: &mut CheckReport,
    snapshots: &[SnapshotInfo],
    recipes: Vec<(crate::store::SnapshotId, Result<Recipe, String>)>,
    files: &HashMap<Digest, Found>,
    cataloged: &HashMap<Digest, (u64, u64)>,
    progress: CheckProgress<'_>,
) -> HashSet<Digest> {
    let info: HashMap<_, _> = snapshots.iter().map(|s| (s.id, s)).collect();
    let total: u64 = if cataloged.is_empty() {
        files
            .values()
            .filter_map(|f| fs::symlink_metadata(&f.path).ok().map(|m| m.len()))
            .sum()
    } else {
        cataloged.values().map(|&(_, stored)| stored).sum()
    };
    // Contents by digest, in the order their first snapshot comes.
    let mut order: Vec<(Recipe, Vec<crate::store::SnapshotId>)> = Vec::new();
    let mut at: HashMap<Digest, usize> = HashMap::new();
    let mut damaged = Vec::new();
    for (id, recipe) in recipes {
        match recipe {
            Ok(r) => match at.get(&r.digest) {
                Some(&i) => order[i].1.push(id),
                None => {
                    at.insert(r.digest, order.len());
                    order.push((r, vec![id]));
                }
            },
            Err(what) => {
                if let Some(s) = info.get(&id) {
                    damaged.push(DamagedSnapshot {
                        id,
                        taken_at_ms: s.taken_at_ms,
                        file_name: s.file_name.clone(),
                        chunks: Vec::new(),
                        what: format!("what it holds cannot be known: {what}"),
                    });
                }
            }
        }
    }
    let mut verdicts: HashMap<Digest, Result<(), String>> = HashMap::new();
    let mut previous: HashMap<Digest, Vec<u8>> = HashMap::new();
    let mut used = HashSet::new();
    for (recipe, holders) in &order {
        report.contents += 1;
        let mut bad: Vec<Digest> = Vec::new();
        let mut unreadable = false;
        let mut current: HashMap<Digest, Vec<u8>> = HashMap::new();
        let mut hasher = blake3::Hasher::new();
        let mut length = 0u64;
        for (digest, raw_size) in &recipe.chunks {
            used.insert(*digest);
            if let Some(Err(_)) = verdicts.get(digest) {
                if !bad.contains(digest) {
                    bad.push(*digest);
                }
                continue;
            }
            let raw = match previous.remove(digest).or_else(|| current.remove(digest)) {
                Some(raw) => raw,
                None => {
                    let (verdict, len) = verify(files.get(digest), digest, Some(*raw_size));
                    if !verdicts.contains_key(digest) {
                        report.chunks += 1;
                        report.stored_bytes += len;
                        progress(report.stored_bytes, total);
                    }
                    let path = files
                        .get(digest)
                        .map_or_else(|| PathBuf::from(digest.to_hex()), |f| f.path.clone());
                    match verdict {
                        Verdict::Whole(raw) => {
                            verdicts.insert(*digest, Ok(()));
                            raw
                        }
                        Verdict::Damaged(what) => {
                            report.damaged_chunks.push(ChunkProblem {
                                digest: *digest,
                                path,
                                what: what.clone(),
                            });
                            verdicts.insert(*digest, Err(what));
                            bad.push(*digest);
                            continue;
                        }
                        Verdict::Unreadable(what) => {
                            if !verdicts.contains_key(digest) {
                                report.unreadable.push(StoreProblem {
                                    path,
                                    what,
                                    hint: None,
                                });
                            }
                            verdicts.insert(*digest, Ok(()));
                            unreadable = true;
                            continue;
                        }
                    }
                }
            };
            hasher.update(&raw);
            length += raw.len() as u64;
            current.insert(*digest, raw);
        }
        previous = current;
        report.content_bytes += length;
        let what = if !bad.is_empty() {
            Some(format!(
                "{} of its {} chunks {} missing or damaged",
                bad.len(),
                recipe.chunks.len(),
                if bad.len() == 1 { "is" } else { "are" }
            ))
        } else if unreadable {
            None
        } else if length != recipe.size {
            Some(format!(
                "its chunks add up to {length} bytes, the catalog says {}",
                recipe.size
            ))
        } else if hasher.finalize().as_bytes() != recipe.digest.as_bytes() {
            Some("its chunks do not hash to its recorded content hash".into())
        } else {
            None
        };
        if let Some(what) = what {
            for id in holders {
                if let Some(s) = info.get(id) {
                    damaged.push(DamagedSnapshot {
                        id: *id,
                        taken_at_ms: s.taken_at_ms,
                        file_name: s.file_name.clone(),
                        chunks: bad.clone(),
                        what: what.clone(),
                    });
                }
            }
        }
    }
    damaged.sort_by_key(|d| (d.taken_at_ms, d.id));
    report.damaged_snapshots = damaged;
    used
}
