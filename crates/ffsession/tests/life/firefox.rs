//! A Firefox profile written as Firefox writes it, on the simulator's clock:
//! `recovery.jsonlz4` rotated into `recovery.baklz4` at every write,
//! `sessionstore.jsonlz4` at a clean quit, moved to `previous.jsonlz4` at
//! the next start, `upgrade.jsonlz4-<build>` at a version change, and
//! crashes that leave a cut or overwritten file. It keeps, for every file,
//! what it wrote (the session JSON and its `lastUpdate`, or "damaged"): the
//! model's knowledge, never read back through ffsession.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// What the simulator knows of one session file it wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    /// A whole session: its JSON and `session.lastUpdate`.
    Session { json: Vec<u8>, last_update: u64 },
    /// A file Firefox would skip (cut, overwritten header), with its
    /// modification time.
    Damaged { mtime: u64 },
}

/// The files Firefox writes, each with its place in the order Firefox tries
/// them (lower first): the model's own table.
pub const SESSIONSTORE: &str = "sessionstore.jsonlz4";
pub const RECOVERY: &str = "sessionstore-backups/recovery.jsonlz4";
pub const RECOVERY_BAK: &str = "sessionstore-backups/recovery.baklz4";
pub const PREVIOUS: &str = "sessionstore-backups/previous.jsonlz4";

/// Firefox's order of its files (0 first), by name.
pub fn role(name: &str) -> u8 {
    match name {
        SESSIONSTORE => 0,
        RECOVERY => 1,
        RECOVERY_BAK => 2,
        PREVIOUS => 3,
        n if n.starts_with("sessionstore-backups/upgrade.jsonlz4-") => 4,
        _ => 6,
    }
}

/// The simulated Firefox and its profile folder.
pub struct Firefox {
    pub dir: PathBuf,
    pub running: bool,
    /// The open tabs (URL id, last accessed), in order.
    pub tabs: Vec<(u64, u64)>,
    next_tab: u64,
    build: u32,
    /// What each file of the profile holds now, by name.
    pub files: BTreeMap<String, Written>,
}

impl Firefox {
    /// A new profile in `dir`, whose tabs are numbered from `first_tab`
    /// (each machine its own pages).
    pub fn new(dir: &Path, first_tab: u64) -> Firefox {
        fs::create_dir_all(dir.join("sessionstore-backups")).unwrap();
        Firefox {
            dir: dir.to_path_buf(),
            running: false,
            tabs: Vec::new(),
            next_tab: first_tab,
            build: 1,
            files: BTreeMap::new(),
        }
    }

    /// The session JSON of the open tabs at `now`.
    pub fn session_json(tabs: &[(u64, u64)], now: u64) -> Vec<u8> {
        let mut out = String::from(r#"{"version":["sessionrestore",1],"windows":[{"tabs":["#);
        for (i, (t, seen)) in tabs.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&format!(
                r#"{{"entries":[{{"url":"http://127.0.0.1/page/{t}","title":"Page {t}"}}],"index":1,"lastAccessed":{seen}}}"#
            ));
        }
        out.push_str(&format!(
            r#"],"selected":1}}],"selectedWindow":1,"_closedWindows":[],"session":{{"lastUpdate":{now},"startTime":{now}}}}}"#
        ));
        out.into_bytes()
    }

    fn put(&mut self, name: &str, written: Written, mtime: u64) {
        let path = self.dir.join(name);
        let bytes = match &written {
            Written::Session { json, .. } => ffsession::format::compress(json).unwrap(),
            Written::Damaged { .. } => unreachable!("damaged files are written by crash_writing"),
        };
        write_file(&path, &bytes, mtime);
        self.files.insert(name.to_owned(), written);
    }

    fn rename(&mut self, from: &str, to: &str) {
        if let Some(w) = self.files.remove(from) {
            fs::rename(self.dir.join(from), self.dir.join(to)).unwrap();
            self.files.insert(to.to_owned(), w);
        }
    }

    fn remove(&mut self, name: &str) {
        if self.files.remove(name).is_some() {
            fs::remove_file(self.dir.join(name)).unwrap();
        }
    }

    /// Start: a clean-shutdown file becomes `previous.jsonlz4` (and, at a
    /// version change, an upgrade copy); the tabs of the newest whole file
    /// are restored, as Firefox picks it (by its own order of files).
    pub fn start(&mut self, upgrade: bool, now: u64) {
        assert!(!self.running);
        if upgrade {
            if let Some(w @ Written::Session { .. }) = self.files.get(SESSIONSTORE).cloned() {
                let name = format!("sessionstore-backups/upgrade.jsonlz4-2026{:06}", self.build);
                self.put(&name, w, now);
            }
            self.build += 1;
        }
        let restored = [SESSIONSTORE, RECOVERY, RECOVERY_BAK, PREVIOUS]
            .iter()
            .find_map(|n| match self.files.get(*n) {
                Some(Written::Session { json, .. }) => Some(json.clone()),
                _ => None,
            });
        self.rename(SESSIONSTORE, PREVIOUS);
        self.tabs = restored.map(|j| tabs_of(&j)).unwrap_or_default();
        if self.tabs.is_empty() {
            self.open_tabs(1, now);
        }
        self.running = true;
    }

    pub fn open_tabs(&mut self, n: usize, now: u64) {
        for _ in 0..n {
            self.tabs.push((self.next_tab, now));
            self.next_tab += 1;
        }
    }

    /// The user looks at tab `i`.
    pub fn visit(&mut self, i: usize, now: u64) {
        if let Some(t) = self.tabs.get_mut(i) {
            t.1 = now;
        }
    }

    /// A write of the running session: the old recovery file becomes the
    /// backup, then the new one is written.
    pub fn write(&mut self, now: u64) {
        assert!(self.running);
        self.rename(RECOVERY, RECOVERY_BAK);
        let json = Self::session_json(&self.tabs, now);
        self.put(
            RECOVERY,
            Written::Session {
                json,
                last_update: now,
            },
            now,
        );
    }

    /// A crash in the middle of a write: the new recovery file is cut short
    /// (or its header overwritten) and Firefox stops.
    pub fn crash_writing(&mut self, now: u64, cut: bool) {
        assert!(self.running);
        self.rename(RECOVERY, RECOVERY_BAK);
        let json = Self::session_json(&self.tabs, now);
        let mut bytes = ffsession::format::compress(&json).unwrap();
        if cut {
            bytes.truncate(bytes.len() / 2);
        } else {
            bytes[..8].copy_from_slice(b"garbage!");
        }
        write_file(&self.dir.join(RECOVERY), &bytes, now);
        self.files
            .insert(RECOVERY.to_owned(), Written::Damaged { mtime: now });
        self.running = false;
    }

    /// A crash between writes: the files stay as they are.
    pub fn crash(&mut self) {
        self.running = false;
    }

    /// A clean quit: the session is written as `sessionstore.jsonlz4` and
    /// the recovery files go.
    pub fn quit(&mut self, now: u64) {
        assert!(self.running);
        let json = Self::session_json(&self.tabs, now);
        self.put(
            SESSIONSTORE,
            Written::Session {
                json,
                last_update: now,
            },
            now,
        );
        self.remove(RECOVERY);
        self.remove(RECOVERY_BAK);
        self.running = false;
    }

    /// Clearing history deletes `sessionstore-backups/`.
    pub fn clear_history(&mut self) {
        let names: Vec<String> = self
            .files
            .keys()
            .filter(|n| n.starts_with("sessionstore-backups/"))
            .cloned()
            .collect();
        for n in names {
            self.remove(&n);
        }
    }

    /// After ffsession wrote into the profile (a restore, a tidy): what it left,
    /// read from the folder, the restored file decoded here with the
    /// simulator's own reader of mozlz4.
    pub fn rescan_after_restore(&mut self) -> Option<Vec<u8>> {
        let names: Vec<String> = self.files.keys().cloned().collect();
        for n in names {
            if !self.dir.join(&n).exists() {
                self.files.remove(&n);
            }
        }
        let bytes = fs::read(self.dir.join(SESSIONSTORE)).ok()?;
        let json = decode_mozlz4(&bytes)?;
        let last_update = last_update_of(&json)?;
        self.files.insert(
            SESSIONSTORE.to_owned(),
            Written::Session {
                json: json.clone(),
                last_update,
            },
        );
        Some(json)
    }
}

fn write_file(path: &Path, bytes: &[u8], mtime_ms: u64) {
    let tmp = path.with_extension("sim-tmp");
    fs::write(&tmp, bytes).unwrap();
    let f = fs::File::options().write(true).open(&tmp).unwrap();
    f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_millis(mtime_ms))
        .unwrap();
    drop(f);
    fs::rename(&tmp, path).unwrap();
}

/// mozlz4 decoded with lz4_flex directly (not ffsession's reader).
pub fn decode_mozlz4(bytes: &[u8]) -> Option<Vec<u8>> {
    if bytes.len() < 12 || &bytes[..8] != b"mozLz40\0" {
        return None;
    }
    let size = u32::from_le_bytes(bytes[8..12].try_into().ok()?) as usize;
    lz4_flex::block::decompress(&bytes[12..], size).ok()
}

/// `session.lastUpdate` of a session JSON, read with serde_json's values.
pub fn last_update_of(json: &[u8]) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_slice(json).ok()?;
    v["session"]["lastUpdate"].as_u64()
}

/// The tabs (id, last accessed) of a session JSON the simulator wrote.
pub fn tabs_of(json: &[u8]) -> Vec<(u64, u64)> {
    let v: serde_json::Value = serde_json::from_slice(json).unwrap_or_default();
    let mut out = Vec::new();
    for w in v["windows"].as_array().into_iter().flatten() {
        for t in w["tabs"].as_array().into_iter().flatten() {
            if let Some(id) = t["entries"][0]["url"]
                .as_str()
                .and_then(|u| u.rsplit('/').next())
                .and_then(|s| s.parse().ok())
            {
                out.push((id, t["lastAccessed"].as_u64().unwrap_or(0)));
            }
        }
    }
    out
}
