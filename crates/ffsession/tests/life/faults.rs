//! The simulator's faults: a full disk, a backup killed after a random
//! write, a flipped bit in a stored chunk; and `check`.

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
    pub(crate) fn backup_killed(&mut self, kill_after: u64) {
        // The test hook kills with SIGKILL on Unix only.
        if cfg!(not(unix)) {
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["life_child", "--exact", "--nocapture", "--test-threads=1"])
            .env("FFSESSION_LIFE_CHILD", "backup")
            .env("FFSESSION_LIFE_STORE", &self.store_dir)
            .env("FFSESSION_LIFE_PROFILE", &self.ff.dir)
            .env("FFSESSION_LIFE_NOW", self.now.to_string())
            .env("FFSESSION_LIFE_KILL_AFTER", kill_after.to_string())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !stdout.contains("CHILD DONE") {
            #[cfg(unix)]
            assert_eq!(
                std::os::unix::process::ExitStatusExt::signal(&out.status),
                Some(9),
                "the child neither finished nor was killed: {stdout} {}",
                String::from_utf8_lossy(&out.stderr)
            );
            return;
        }
        let store = Store::open_read_only(&self.store_dir).unwrap();
        let taken: Vec<_> = stdout
            .lines()
            .filter_map(|l| l.strip_prefix("STORED "))
            .map(|id| {
                store
                    .snapshot(ffsession::store::SnapshotId(id.trim().parse().unwrap()))
                    .unwrap()
            })
            .collect();
        drop(store);
        self.add_entries(&taken);
    }

    /// `check`: with no damage left behind, the store is whole.
    pub(crate) fn check(&mut self) {
        if !self.store_dir.exists() {
            return;
        }
        let report = ffsession::store::check_store(&self.store_dir, &mut |_, _| {}).unwrap();
        assert!(
            report.is_whole(),
            "check finds damage nobody made: {report:?}"
        );
    }

    /// A flipped byte in a stored chunk: `check` must name it; then the
    /// byte is put back.
    pub(crate) fn flip_and_check(&mut self) {
        let mut chunks = Vec::new();
        collect_files(&self.store_dir.join("chunks"), &mut chunks);
        if chunks.is_empty() {
            return;
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
    }
}
