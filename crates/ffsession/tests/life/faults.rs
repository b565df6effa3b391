//! The simulator's faults on one machine: a full disk, a backup or a
//! restore killed after a random write, a flipped bit in a stored chunk;
//! and `check`.

use super::*;

impl Life {
    /// A backup on a disk that fills up after `budget` bytes: all or nothing.
    pub(crate) fn backup_on_full_disk(&mut self, budget: u64) {
        let before = self.observe();
        let mut store = self.store();
        set_test_hook(Some(TestHook {
            fail_after_bytes: Some(budget),
            ..TestHook::default()
        }));
        let result = backup_profile(&mut store, PROFILE, &self.ff.dir, self.now);
        set_test_hook(None);
        drop(store);
        match result {
            Ok(report) => self.add_entries(&report.snapshots),
            Err(_) => {
                let after = self.observe();
                assert_eq!(
                    (before.whole, before.damaged),
                    (after.whole, after.damaged),
                    "promise 6: a backup that failed on a full disk changed what the store holds"
                );
            }
        }
    }

    /// A backup killed (SIGKILL) right after its `kill_after`-th file write,
    /// in a child process: whatever it did not report is not stored as far
    /// as the model knows, and nothing stored before is lost (promise 6).
    pub(crate) fn backup_killed(&mut self, kill_after: u64) -> bool {
        // The test hook kills with SIGKILL on Unix only.
        if cfg!(not(unix)) || !self.store_dir.exists() {
            return false;
        }
        let before = self.snapshot_ids();
        let out = remote::child(self, "backup", kill_after, self.now, &[]);
        if !String::from_utf8_lossy(&out.stdout).contains("CHILD DONE") {
            remote::assert_killed(&out);
        }
        // What it reported is what the simulator wrote; what it committed
        // without reporting (killed after the commit, or an earlier killed
        // backup's data taken in) is stored too, and counts for retention:
        // the model takes it as the store has it.
        self.take_in_what_a_child_stored(&out, &before);
        true
    }

    /// What a child process (`out`) stored, the store then holding only the
    /// ids `before`: the snapshots it reported, as the simulator wrote them,
    /// and those it did not report, as the store reads them.
    fn take_in_what_a_child_stored(&mut self, out: &std::process::Output, before: &BTreeSet<i64>) {
        let reported = self.reported(out);
        let ids: BTreeSet<i64> = reported.iter().map(|s| s.id.0).collect();
        self.add_entries(&reported);
        let unreported: Vec<_> = self
            .new_snapshots(before)
            .into_iter()
            .filter(|s| !ids.contains(&s.id.0))
            .collect();
        self.add_unreported(&unreported);
    }

    /// Snapshots the store holds that no operation reported: the model
    /// takes each as the store reads it.
    pub(crate) fn add_unreported(&mut self, taken: &[ffsession::store::SnapshotInfo]) {
        if taken.is_empty() {
            return;
        }
        let store = Store::open_read_only(&self.store_dir).unwrap();
        for s in taken {
            let json = s.is_ok().then(|| store.read_json(s.id).unwrap());
            self.model.entries.push(Entry {
                file: s.file_name.clone(),
                session_ms: match &json {
                    Some(j) => firefox::last_update_of(j).unwrap_or(0),
                    None => s.mtime_ms.unwrap_or(0),
                },
                json,
                role: firefox::role(&s.file_name),
                stored_at: s.taken_at_ms,
            });
        }
    }

    /// The ids of the store's snapshots now.
    fn snapshot_ids(&self) -> BTreeSet<i64> {
        let store = Store::open_read_only(&self.store_dir).unwrap();
        store.snapshots().unwrap().iter().map(|s| s.id.0).collect()
    }

    /// The store's snapshots whose ids are not in `before`.
    fn new_snapshots(&self, before: &BTreeSet<i64>) -> Vec<ffsession::store::SnapshotInfo> {
        let store = Store::open_read_only(&self.store_dir).unwrap();
        store
            .snapshots()
            .unwrap()
            .into_iter()
            .filter(|s| !before.contains(&s.id.0))
            .collect()
    }

    /// The snapshots a child reported stored (`STORED <id>` lines).
    fn reported(&self, out: &std::process::Output) -> Vec<ffsession::store::SnapshotInfo> {
        let store = Store::open_read_only(&self.store_dir).unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.strip_prefix("STORED "))
            .map(|id| {
                store
                    .snapshot(ffsession::store::SnapshotId(id.trim().parse().unwrap()))
                    .unwrap()
            })
            .collect()
    }

    /// A snapshot of `store` drawn at random among those that are whole
    /// (none when none is).
    pub(crate) fn random_whole_snapshot(
        &mut self,
        store: &Store,
    ) -> Option<ffsession::store::SnapshotId> {
        let ok: Vec<_> = store
            .snapshots()
            .unwrap()
            .into_iter()
            .filter(|s| s.is_ok())
            .collect();
        if ok.is_empty() {
            return None;
        }
        Some(ok[self.rng.usize(0..ok.len())].id)
    }

    /// A restore of a random snapshot killed (SIGKILL) after its
    /// `kill_after`-th file write, in a child process: each file of the
    /// profile is as it was or as the restore writes it, what it replaced
    /// is in the store, and an undo point it recorded is kept.
    pub(crate) fn restore_killed(&mut self, kill_after: u64) -> bool {
        if cfg!(not(unix)) || self.ff.running || !self.store_dir.exists() {
            return false;
        }
        let store = Store::open_read_only(&self.store_dir).unwrap();
        let Some(id) = self.random_whole_snapshot(&store) else {
            return false;
        };
        let want = store.read_json(id).unwrap();
        let points_before = store.undo_points().unwrap().len();
        drop(store);
        let ids_before = self.snapshot_ids();
        let contents = self.whole_files();
        let before: BTreeSet<Vec<u8>> = contents.iter().cloned().collect();
        let out = remote::child(
            self,
            "restore",
            kill_after,
            self.now,
            &[("FFSESSION_LIFE_SNAPSHOT", id.0.to_string())],
        );
        let done = String::from_utf8_lossy(&out.stdout).contains("CHILD DONE");
        if !done {
            remote::assert_killed(&out);
        }
        // What it stored: the undo point's snapshots (before it wrote into
        // the profile), reported if it finished, else taken as stored.
        self.take_in_what_a_child_stored(&out, &ids_before);
        // What the profile holds now: each file as it was, or the restored
        // session.
        let written = self.ff.rescan_after_restore();
        if let Some(w) = &written {
            assert!(
                *w == want || before.contains(w),
                "a killed restore left a session file that is neither the old one nor the restored one"
            );
        }
        // A restore that recorded its undo point is one, as the model knows
        // restores: what it replaced is kept, what it restored is a session
        // of its time.
        let store = Store::open_read_only(&self.store_dir).unwrap();
        if done || store.undo_points().unwrap().len() > points_before {
            self.push_undo(contents, Some(want));
        }
        true
    }

    /// `check`: with no damage left behind, the store is whole.
    pub(crate) fn check(&mut self) -> bool {
        if !self.store_dir.exists() {
            return false;
        }
        let report = ffsession::store::check_store(&self.store_dir, &mut |_, _| {}).unwrap();
        assert!(
            report.is_whole(),
            "check finds damage nobody made: {report:?}"
        );
        true
    }

    /// A flipped byte in a stored chunk: `check` must name it; then the
    /// byte is put back.
    pub(crate) fn flip_and_check(&mut self) -> bool {
        let mut chunks = Vec::new();
        collect_files(&self.store_dir.join("chunks"), &mut chunks);
        if chunks.is_empty() {
            return false;
        }
        let path = &chunks[self.rng.usize(0..chunks.len())];
        let mut bytes = fs::read(path).unwrap();
        let original = zstd::decode_all(&bytes[..]).ok();
        let at = self.rng.usize(0..bytes.len());
        let bit = 1u8 << self.rng.u32(0..8);
        bytes[at] ^= bit;
        fs::write(path, &bytes).unwrap();
        // Some bits of a zstd frame change nothing it decodes to.
        let harmless = original.is_some() && zstd::decode_all(&bytes[..]).ok() == original;
        let report = ffsession::store::check_store(&self.store_dir, &mut |_, _| {}).unwrap();
        // A chunk no snapshot uses (a full disk left it) is only listed.
        assert!(
            !report.is_whole() || report.orphan_chunks.contains(path) || harmless,
            "promise 6: check found nothing wrong after a flipped bit ({bit:#x} at byte {at} of {}) in {}: {report:?}",
            bytes.len(),
            path.display()
        );
        bytes[at] ^= bit;
        fs::write(path, &bytes).unwrap();
        true
    }
}
