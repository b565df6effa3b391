//! Adding snapshots: verify, chunk, write the chunks the store lacks (or
//! whose file is damaged), read the content back, then commit the rows.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use rusqlite::{params, OptionalExtension};

use super::chunk::{self, Digest};
use super::layout::make_dir;
use super::snapshot::{check, kind_name};
use super::{
    catalog, manifest, tabs, to_i64, SessionCounts, SnapshotId, SnapshotInfo, SnapshotSource,
    SnapshotStatus, Store, StoreError,
};
use crate::format::Format;

impl Store {
    /// Take a snapshot of `source` at `now_ms` (ms since the Unix epoch).
    ///
    /// The bytes are verified first (decompressed and parsed as a session): a
    /// readable session stores its JSON with status `ok`; anything else stores
    /// the raw bytes with status `corrupt` and the reason. Only chunks the
    /// store does not hold yet are written, all of them durably before the
    /// catalog row that references them commits.
    pub fn add_snapshot(
        &mut self,
        source: SnapshotSource,
        now_ms: u64,
    ) -> Result<SnapshotInfo, StoreError> {
        let mut infos = self.add_snapshots(vec![source], now_ms)?;
        Ok(infos.remove(0))
    }

    /// Take snapshots of several files at once, all or nothing: every new
    /// chunk of every file is written durably first, then one catalog
    /// transaction adds all the rows. If anything fails (a full disk, say),
    /// the catalog is as it was; chunk files already written are unreferenced
    /// and garbage collection removes them.
    pub fn add_snapshots(
        &mut self,
        sources: Vec<SnapshotSource>,
        now_ms: u64,
    ) -> Result<Vec<SnapshotInfo>, StoreError> {
        self.writable()?;
        let mut batch = Batch::default();
        let mut prepared = Vec::with_capacity(sources.len());
        for source in sources {
            let p = self.prepare(source, &mut batch)?;
            if p.verdict.is_ok() {
                batch.newest.insert(p.file_name.clone(), p.digest);
            }
            prepared.push(p);
        }

        // Every chunk file named below is durable now. The ids the rows will
        // get (the lock keeps other writers out), then the manifests, then
        // the rows: a committed row always has its manifests.
        let base: i64 = self
            .conn
            .query_row(
                "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'snapshots'), 0)",
                [],
                |r| r.get(0),
            )
            .map_err(|e| self.sql(e))?;
        let mut infos = Vec::with_capacity(prepared.len());
        let mut written_contents = HashSet::new();
        for (i, p) in prepared.iter().enumerate() {
            let info = p.info(SnapshotId(base + 1 + i as i64), now_ms);
            if written_contents.insert(p.digest) {
                let list = match &p.list {
                    Some(list) => list.clone(),
                    None => self.content_chunks_by_hash(&p.digest)?,
                };
                manifest::write_content(&self.dir, &p.digest, &list)?;
            }
            manifest::write_snapshot(&self.dir, &info)?;
            infos.push(info);
        }

        let path = self.catalog_path.clone();
        let err = |e| catalog::sql_error(&path, e);
        let tx = self.conn.transaction().map_err(err)?;
        for (p, info) in prepared.iter().zip(&infos) {
            insert_rows(&tx, &path, p, info)?;
        }
        tx.commit().map_err(err)?;

        // The tab index, in a transaction of its own: it never fails a backup.
        let fresh = prepared
            .iter_mut()
            .zip(&infos)
            .filter_map(|(p, info)| Some((info.id, p.tabs.take()?)))
            .collect();
        self.catch_up_index(fresh);
        infos.iter().map(|info| self.snapshot(info.id)).collect()
    }

    /// The ordered chunks of the stored content with digest `digest`.
    fn content_chunks_by_hash(&self, digest: &Digest) -> Result<Vec<(Digest, usize)>, StoreError> {
        let id: i64 = self
            .conn
            .prepare_cached("SELECT id FROM contents WHERE hash = ?1")
            .and_then(|mut s| s.query_row([&digest.as_bytes()[..]], |r| r.get(0)))
            .map_err(|e| self.sql(e))?;
        self.content_chunks(id)
    }

    /// Verify and chunk one source, writing the chunks the store lacks;
    /// `batch` holds what earlier sources of the same batch did.
    fn prepare(&self, source: SnapshotSource, batch: &mut Batch) -> Result<Prepared, StoreError> {
        let SnapshotSource {
            bytes,
            profile,
            file_name,
            kind,
            mtime_ms,
        } = source;
        let checked = check(&file_name, &kind, bytes);
        let zen = kind.is_zen();
        let content = &checked.content;
        let digest = Digest::of(content);
        // The same content earlier in this batch: written and read back
        // already, nothing new to store (or to count).
        if let Some(list) = batch.contents.get(&digest) {
            let same_as_predecessor = batch.newest.get(&file_name) == Some(&digest);
            return Ok(Prepared {
                digest,
                content_len: content.len() as u64,
                list: Some(list.clone()),
                new_chunks: Vec::new(),
                stored_size: 0,
                tabs: match (&checked.verdict, same_as_predecessor) {
                    (Ok(_), false) => tabs::tab_rows(content, zen),
                    _ => None,
                },
                verdict: checked.verdict,
                format: checked.format,
                profile,
                file_name,
                kind,
                mtime_ms,
            });
        }
        let existing: Option<i64> = self
            .conn
            .prepare_cached("SELECT id FROM contents WHERE hash = ?1")
            .and_then(|mut s| {
                s.query_row([&digest.as_bytes()[..]], |r| r.get(0))
                    .optional()
            })
            .map_err(|e| self.sql(e))?;
        let (order, mut new_chunks, mut stored_size) = match existing {
            Some(id) if !self.read_back && self.content_files_present(id)? => {
                (Vec::new(), Vec::new(), 0)
            }
            // Its chunks are read back below, and healed if damaged.
            Some(_) if self.read_back => (Vec::new(), Vec::new(), 0),
            _ => self.write_chunks(content, &batch.chunks)?,
        };
        let list = match existing {
            Some(id) => self.content_chunks(id)?,
            None => order,
        };
        if self.read_back {
            // A stored content with this digest is these very bytes, cut
            // where its catalog rows say: each chunk must decode to its piece,
            // which (written under the digest of its bytes, by construction)
            // is then also its name; no need to hash it again.
            let (healed, bytes) = self.make_whole(&file_name, content, &list)?;
            new_chunks.extend(healed);
            stored_size += bytes;
        }
        batch.chunks.extend(new_chunks.iter().map(|c| c.0));
        batch.contents.insert(digest, list.clone());
        // The content of its predecessor (the newest verified snapshot of the
        // same source) only extends the predecessor's runs in the tab index;
        // anything else verified is parsed (once) for it.
        let same_as_predecessor = match (batch.newest.get(&file_name), existing) {
            (Some(newest), _) => *newest == digest,
            (None, Some(id)) => self.newest_content_of(&file_name)? == Some(id),
            (None, None) => false,
        };
        let tabs = match (&checked.verdict, same_as_predecessor) {
            (Ok(_), false) => tabs::tab_rows(content, zen),
            _ => None,
        };
        Ok(Prepared {
            digest,
            content_len: content.len() as u64,
            list: existing.is_none().then_some(list),
            new_chunks,
            stored_size,
            verdict: checked.verdict,
            tabs,
            format: checked.format,
            profile,
            file_name,
            kind,
            mtime_ms,
        })
    }

    /// The content of the newest verified snapshot of source `source_name`.
    fn newest_content_of(&self, source_name: &str) -> Result<Option<i64>, StoreError> {
        self.conn
            .prepare_cached(
                "SELECT content_id FROM snapshots
                 WHERE id = (SELECT max(id) FROM snapshots WHERE source_name = ?1 AND status = 'ok')",
            )
            .and_then(|mut s| s.query_row([source_name], |r| r.get(0)).optional())
            .map_err(|e| self.sql(e))
    }

    /// True if every chunk file of content `id` exists (a missing one is
    /// written again from the new snapshot's bytes).
    fn content_files_present(&self, id: i64) -> Result<bool, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT ch.hash FROM content_chunks cc JOIN chunks ch ON ch.id = cc.chunk_id
                 WHERE cc.content_id = ?1",
            )
            .map_err(|e| self.sql(e))?;
        let hashes: Vec<Vec<u8>> = stmt
            .query_map([id], |r| r.get(0))
            .and_then(|rows| rows.collect())
            .map_err(|e| self.sql(e))?;
        for h in hashes {
            let d = Digest::from_slice(&h)
                .ok_or_else(|| self.corrupt("a chunk hash is not 32 bytes"))?;
            if !chunk::chunk_path(&self.chunks_dir, &d).is_file() {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Split `content`, write the chunks the store lacks (durably), and return
    /// the ordered chunks (digest, raw size), the chunks written (digest, raw size, stored
    /// size) and the bytes written.
    #[allow(clippy::type_complexity)]
    fn write_chunks(
        &self,
        content: &[u8],
        in_batch: &HashSet<Digest>,
    ) -> Result<(Vec<(Digest, usize)>, Vec<(Digest, u64, u64, Digest)>, u64), StoreError> {
        let mut order = Vec::new();
        let mut seen = HashSet::new();
        let mut written = Vec::new();
        let mut stored = 0u64;
        let mut known = self
            .conn
            .prepare_cached("SELECT 1 FROM chunks WHERE hash = ?1")
            .map_err(|e| self.sql(e))?;
        for piece in self.params.split(content) {
            let digest = Digest::of(piece);
            order.push((digest, piece.len()));
            // Written once per batch: another file of the batch wrote it.
            if !seen.insert(digest) || in_batch.contains(&digest) {
                continue;
            }
            let path = chunk::chunk_path(&self.chunks_dir, &digest);
            let in_catalog = known
                .exists([&digest.as_bytes()[..]])
                .map_err(|e| self.sql(e))?;
            if in_catalog && path.is_file() {
                continue;
            }
            let (packed, frame) = self.write_chunk(&path, piece)?;
            stored += packed;
            written.push((digest, piece.len() as u64, packed, frame));
        }
        Ok((order, written, stored))
    }

    /// Compress `piece` and write it durably at `path` (its fan-out folder
    /// created if needed); returns the bytes written.
    fn write_chunk(&self, path: &Path, piece: &[u8]) -> Result<(u64, Digest), StoreError> {
        if let Some(fan_out) = path.parent() {
            make_dir(fan_out, &self.chunks_dir)?;
        }
        let packed = chunk::compress(piece, path)?;
        chunk::write(path, &packed)?;
        Ok((packed.len() as u64, Digest::of(&packed)))
    }

    /// The frame digests the catalog records for `list` (`None` for a chunk
    /// it does not know, or catalogued before version 4).
    pub(super) fn frames_of(
        &self,
        list: &[(Digest, usize)],
    ) -> Result<Vec<Option<Digest>>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT frame_hash FROM chunks WHERE hash = ?1")
            .map_err(|e| self.sql(e))?;
        list.iter()
            .map(|(d, _)| {
                let frame: Option<Option<Vec<u8>>> = stmt
                    .query_row([&d.as_bytes()[..]], |r| r.get(0))
                    .optional()
                    .map_err(|e| self.sql(e))?;
                Ok(frame.flatten().and_then(|f| Digest::from_slice(&f)))
            })
            .collect()
    }

    /// Read the chunks `list` back from disk and check that they give
    /// `content` (digest `digest`) byte for byte. A chunk that is missing or
    /// damaged (a flipped bit, a truncated file, a symbolic link in its place)
    /// is written again, atomically, from `content`: its name is the hash of
    /// its bytes, so the fresh piece is exactly what the file should hold, and
    /// every older snapshot sharing it is healed too. Returns the chunks
    /// rewritten (digest, raw size, stored size) and the bytes written; a
    /// content still not whole after that is [`StoreError::ReadBack`].
    #[allow(clippy::type_complexity)]
    fn make_whole(
        &self,
        file_name: &str,
        content: &[u8],
        list: &[(Digest, usize)],
    ) -> Result<(Vec<(Digest, u64, u64, Digest)>, u64), StoreError> {
        let bad = match self.read_back(list, &self.frames_of(list)?, content)? {
            ReadBack::Whole => return Ok((Vec::new(), 0)),
            ReadBack::BadChunks(bad) => bad,
            ReadBack::Mismatch(reason) => return Err(self.read_back_error(file_name, reason)),
        };
        let pieces: HashMap<Digest, &[u8]> = self
            .params
            .split(content)
            .map(|p| (Digest::of(p), p))
            .collect();
        let mut healed = Vec::new();
        let mut stored = 0;
        for (d, _why) in &bad {
            let Some(piece) = pieces.get(d) else {
                return Err(self.read_back_error(
                    file_name,
                    format!("chunk {d} is damaged and the new content does not hold it"),
                ));
            };
            let path = chunk::chunk_path(&self.chunks_dir, d);
            let (packed, frame) = self.write_chunk(&path, piece)?;
            stored += packed;
            healed.push((*d, piece.len() as u64, packed, frame));
        }
        match self.read_back(list, &self.frames_of(list)?, content)? {
            ReadBack::Whole => Ok((healed, stored)),
            ReadBack::BadChunks(still) => {
                let (d, why) = &still[0];
                Err(StoreError::ReadBack {
                    path: chunk::chunk_path(&self.chunks_dir, d),
                    file: file_name.to_owned(),
                    reason: format!("chunk {d} is still damaged after being written again: {why}"),
                })
            }
            ReadBack::Mismatch(reason) => Err(self.read_back_error(file_name, reason)),
        }
    }

    fn read_back_error(&self, file_name: &str, reason: String) -> StoreError {
        StoreError::ReadBack {
            path: self.dir.clone(),
            file: file_name.to_owned(),
            reason,
        }
    }

    /// Read `list` from disk: each chunk decompressed and checked against its
    /// name, and compared with its place in `content` (whose digest the
    /// caller computed), so the whole reads back byte-identical. Two threads
    /// share the chunks when there are many.
    ///
    /// Each digest in `list` is that of `content`'s piece at its place (a new
    /// content was cut into those pieces; a stored one with the same digest
    /// holds the same bytes, cut where its rows say), so a chunk that decodes
    /// to its piece also has the right name: it is compared, not hashed.
    ///
    /// A chunk whose file holds exactly the bytes of its recorded frame digest
    /// (`frames`, see catalog version 4) was read back whole when that digest
    /// was recorded: it is not decompressed again.
    fn read_back(
        &self,
        list: &[(Digest, usize)],
        frames: &[Option<Digest>],
        content: &[u8],
    ) -> Result<ReadBack, StoreError> {
        let total: usize = list.iter().map(|(_, n)| n).sum();
        if total != content.len() {
            return Ok(ReadBack::Mismatch(format!(
                "its chunks add up to {total} bytes, the content has {}",
                content.len()
            )));
        }
        let mut offsets = Vec::with_capacity(list.len());
        let mut at = 0;
        for (_, n) in list {
            offsets.push(at);
            at += n;
        }
        let threads = if list.len() >= 64 { 2 } else { 1 };
        let per = list.len().div_ceil(threads).max(1);
        let chunks_dir = &self.chunks_dir;
        let parts: Vec<std::io::Result<PartVerdict>> = std::thread::scope(|s| {
            let handles: Vec<_> = list
                .chunks(per)
                .zip(offsets.chunks(per))
                .zip(frames.chunks(per))
                .map(|((part, offs), frames)| {
                    s.spawn(move || {
                        let mut reader = chunk::Reader::new()?;
                        let mut bad = Vec::new();
                        let mut differs = None;
                        for (((d, n), &off), frame) in part.iter().zip(offs).zip(frames) {
                            let path = chunk::chunk_path(chunks_dir, d);
                            if let Some(frame) = frame {
                                match reader.frame_matches(&path, frame, *n) {
                                    Ok(true) => continue,
                                    Ok(false) => {}
                                    Err(failure) => {
                                        bad.push((*d, failure.to_string()));
                                        continue;
                                    }
                                }
                            }
                            let piece = &content[off..off + n];
                            match reader.read_as(&path, d, *n, Some(piece)) {
                                Ok(raw) => {
                                    if raw != piece && differs.is_none() {
                                        differs = Some(*d);
                                    }
                                }
                                Err(failure) => bad.push((*d, failure.to_string())),
                            }
                        }
                        Ok((bad, differs))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(std::io::Error::other("read-back thread panicked")))
                })
                .collect()
        });
        let mut bad: Vec<(Digest, String)> = Vec::new();
        let mut differs = None;
        for part in parts {
            let (b, d) = part.map_err(|e| crate::error::PathError {
                path: self.chunks_dir.clone(),
                source: e,
            })?;
            for (digest, why) in b {
                if !bad.iter().any(|(x, _)| *x == digest) {
                    bad.push((digest, why));
                }
            }
            differs = differs.or(d);
        }
        if !bad.is_empty() {
            return Ok(ReadBack::BadChunks(bad));
        }
        if let Some(d) = differs {
            return Ok(ReadBack::Mismatch(format!(
                "chunk {d} is sound but is not the content's bytes at its place"
            )));
        }
        Ok(ReadBack::Whole)
    }
}

/// What one read-back thread found: the chunks missing or damaged (digest,
/// what is wrong), and the first sound chunk that is not the content's bytes.
type PartVerdict = (Vec<(Digest, String)>, Option<Digest>);

/// What reading a content back found.
enum ReadBack {
    /// Byte-identical.
    Whole,
    /// These chunks (digest, what is wrong) are missing or damaged.
    BadChunks(Vec<(Digest, String)>),
    /// Every chunk is sound but together they are not the content.
    Mismatch(String),
}

/// A source verified and chunked, its chunk files durable, not yet catalogued.
struct Prepared {
    digest: Digest,
    content_len: u64,
    /// The ordered chunks of a content new to the store (`None` when the
    /// store has it: its rows are there).
    list: Option<Vec<(Digest, usize)>>,
    new_chunks: Vec<(Digest, u64, u64, Digest)>,
    stored_size: u64,
    verdict: Result<(SessionCounts, Option<u64>), String>,
    /// The tabs of a verified session, for the tab index; `None` when its
    /// content is that of its predecessor, whose runs it extends.
    tabs: Option<Vec<tabs::TabRow>>,
    format: Option<Format>,
    profile: String,
    file_name: String,
    kind: crate::sources::SourceKind,
    mtime_ms: Option<u64>,
}

/// What earlier sources of one batch did.
#[derive(Default)]
struct Batch {
    /// The content of the newest verified file per source: the predecessor
    /// of the next one of that source.
    newest: HashMap<String, Digest>,
    /// Chunks written (or rewritten) by this batch.
    chunks: HashSet<Digest>,
    /// Contents prepared (written and read back) by this batch, with their
    /// chunks.
    contents: HashMap<Digest, Vec<(Digest, usize)>>,
}

impl Prepared {
    /// The record of this snapshot once it is `id`, taken at `now_ms`.
    fn info(&self, id: SnapshotId, now_ms: u64) -> SnapshotInfo {
        let (counts, last_update, status) = match &self.verdict {
            Ok((c, lu)) => (Some(*c), *lu, SnapshotStatus::Ok),
            Err(why) => (
                None,
                None,
                SnapshotStatus::Corrupt {
                    reason: why.clone(),
                },
            ),
        };
        SnapshotInfo {
            id,
            taken_at_ms: now_ms,
            profile: self.profile.clone(),
            file_name: self.file_name.clone(),
            kind: self.kind.clone(),
            mtime_ms: self.mtime_ms,
            last_update_ms: last_update,
            counts,
            content_hash: self.digest,
            json_size: self.content_len,
            stored_size: self.stored_size,
            format: self.format,
            status,
        }
    }
}

/// Add the catalog rows of one prepared snapshot, recorded as `info`, inside `tx`.
fn insert_rows(
    tx: &rusqlite::Transaction<'_>,
    path: &Path,
    p: &Prepared,
    info: &SnapshotInfo,
) -> Result<(), StoreError> {
    let err = |e| catalog::sql_error(path, e);
    {
        let mut put_chunk = tx
            .prepare_cached(
                "INSERT INTO chunks (hash, raw_size, stored_size, frame_hash) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (hash) DO UPDATE SET stored_size = excluded.stored_size,
                                                  frame_hash = excluded.frame_hash",
            )
            .map_err(err)?;
        // A chunk written again is healed: its damage mark goes.
        let mut healed = tx
            .prepare_cached("DELETE FROM damaged_chunks WHERE hash = ?1")
            .map_err(err)?;
        for (d, raw, stored, frame) in &p.new_chunks {
            healed.execute([&d.as_bytes()[..]]).map_err(err)?;
            put_chunk
                .execute(params![
                    &d.as_bytes()[..],
                    to_i64(*raw),
                    to_i64(*stored),
                    &frame.as_bytes()[..]
                ])
                .map_err(err)?;
        }
    }
    // Looked up again inside the transaction: two files of one batch may share
    // a content.
    let existing: Option<i64> = tx
        .prepare_cached("SELECT id FROM contents WHERE hash = ?1")
        .and_then(|mut s| {
            s.query_row([&p.digest.as_bytes()[..]], |r| r.get(0))
                .optional()
        })
        .map_err(err)?;
    let content_id = match existing {
        Some(id) => id,
        None => {
            tx.execute(
                "INSERT INTO contents (hash, size) VALUES (?1, ?2)",
                params![&p.digest.as_bytes()[..], to_i64(p.content_len)],
            )
            .map_err(err)?;
            let id = tx.last_insert_rowid();
            let mut link = tx
                .prepare_cached(
                    "INSERT INTO content_chunks (content_id, seq, chunk_id)
                     SELECT ?1, ?2, id FROM chunks WHERE hash = ?3",
                )
                .map_err(err)?;
            let list = p
                .list
                .as_deref()
                .ok_or_else(|| StoreError::CatalogCorrupt {
                    path: path.to_path_buf(),
                    reason: format!(
                        "content {} vanished from the catalog while adding",
                        p.digest
                    ),
                })?;
            for (seq, (d, _)) in list.iter().enumerate() {
                let n = link
                    .execute(params![id, to_i64(seq as u64), &d.as_bytes()[..]])
                    .map_err(err)?;
                if n != 1 {
                    return Err(StoreError::CatalogCorrupt {
                        path: path.to_path_buf(),
                        reason: format!("chunk {d} vanished from the catalog while adding"),
                    });
                }
            }
            id
        }
    };
    insert_snapshot_row(tx, path, info, content_id)
}

/// Insert the row of snapshot `info` (its id included) of content
/// `content_id` inside `tx`.
pub(super) fn insert_snapshot_row(
    tx: &rusqlite::Transaction<'_>,
    path: &Path,
    info: &SnapshotInfo,
    content_id: i64,
) -> Result<(), StoreError> {
    let err = |e| catalog::sql_error(path, e);
    let (counts, status, reason) = match &info.status {
        SnapshotStatus::Ok => (info.counts, "ok", None),
        SnapshotStatus::Corrupt { reason } => (None, "corrupt", Some(reason.as_str())),
    };
    tx.execute(
        "INSERT INTO snapshots (id, taken_at, profile, source_name, source_kind, source_mtime,
             last_update, windows, tabs, closed_tabs, closed_windows, content_id,
             stored_size, format, status, reason)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
        params![
            info.id.0,
            to_i64(info.taken_at_ms),
            info.profile,
            info.file_name,
            kind_name(&info.kind),
            info.mtime_ms.map(to_i64),
            info.last_update_ms.map(to_i64),
            counts.map(|c| to_i64(c.windows)),
            counts.map(|c| to_i64(c.tabs)),
            counts.map(|c| to_i64(c.closed_tabs)),
            counts.map(|c| to_i64(c.closed_windows)),
            content_id,
            to_i64(info.stored_size),
            info.format.map(|f| f.to_string()),
            status,
            reason,
        ],
    )
    .map_err(err)?;
    Ok(())
}
