//! The simulator's remote: a folder remote, copies to it, its prune
//! (planned on a local copy, as the command does) and the promises checked
//! on a new machine's copy of it.

use super::*;

impl Life {
    pub(crate) fn remote_dir(&self) -> PathBuf {
        self.root.path().join("remote")
    }

    /// The remote, in a local folder (the same code as every backend above
    /// the backend trait).
    pub(crate) fn open_remote(&self) -> Remote {
        let backend = open_backend(
            &Location::Folder(self.remote_dir()),
            &RemoteOptions::default(),
        )
        .unwrap();
        Remote::open_or_create(backend, "sim", KeyParams { log_n: Some(4) }, "laptop")
            .unwrap()
            .0
    }

    /// What the remote holds, read back through a new machine's copy.
    pub(crate) fn observe_remote(&self) -> Observed {
        let cache = tempfile::tempdir().unwrap();
        let mut store = Store::create_or_open(cache.path().join("store")).unwrap();
        let report = sync_from_remote(&self.open_remote(), &mut store, &mut |_| {}).unwrap();
        assert!(
            report.damaged.is_empty(),
            "the remote does not read: {report:?}"
        );
        drop(store);
        observe_store(&cache.path().join("store"))
    }

    /// `copy --to` the remote: it then holds everything the store holds.
    pub(crate) fn copy(&mut self) {
        if !self.store_dir.exists() {
            return;
        }
        let store = Store::open_read_only(&self.store_dir).unwrap();
        let report = copy_to_remote(
            &store,
            &self.open_remote(),
            &self.machine,
            &Default::default(),
            &mut |_| {},
        )
        .unwrap();
        assert!(report.skipped.is_empty(), "{report:?}");
        drop(store);
        // The remote holds what the store holds (a copy adds; the remote's
        // own prunes remove).
        let mut have = self.remote.entries.clone();
        for e in &self.model.entries {
            let n_local = self.model.entries.iter().filter(|x| *x == e).count();
            let n_remote = have.iter().filter(|x| *x == e).count();
            if n_remote < n_local {
                have.push(e.clone());
            }
        }
        self.remote.entries = have;
        self.copied_at = Some(self.now);
    }

    /// `prune --store REMOTE`: planned on a local copy of the remote, as the
    /// command does, then carried out on the remote.
    pub(crate) fn remote_prune(&mut self, policy: RetentionPolicy) {
        if self.copied_at.is_none() {
            return;
        }
        let before = self.observe_remote();
        let remote = self.open_remote();
        let cache = tempfile::tempdir().unwrap();
        let mut store = Store::create_or_open(cache.path().join("store")).unwrap();
        sync_from_remote(&remote, &mut store, &mut |_| {}).unwrap();
        let (snapshots, plan) =
            prune::plan_store(&store, &policy, &TimeZone::UTC, self.now).unwrap();
        let names: Vec<String> = plan
            .removed()
            .filter_map(|id| snapshots.iter().find(|s| s.id.0 == id))
            .map(|s| remote.snapshot_name(s))
            .collect();
        let mut lock = remote.lock(true, &self.machine).unwrap();
        prune_remote(&mut lock, &names, PruneOptions { keep_unused_ms: 0 }).unwrap();
        drop(lock);
        drop(store);
        let seen = self.observe_remote();
        for (why, json) in self.remote.required_after_prune(&policy, &before.contents) {
            assert!(
                seen.contents.contains(&json),
                "promise 1 on the remote: the {why} session (lastUpdate {:?}) was pruned",
                firefox::last_update_of(&json)
            );
        }
        self.remote.reconcile(&seen);
    }

    /// Promises 3, 4 and 6 on the remote: what was copied (and not pruned
    /// there) is there, with the undo points inside their time and the
    /// sessions holding archived tabs.
    pub(crate) fn check_remote(&self) {
        let Some(copied_at) = self.copied_at else {
            return;
        };
        let seen = self.observe_remote();
        let missing = self.remote.missing(&seen);
        assert!(
            missing.is_empty(),
            "promise 6 on the remote: copied and gone: {missing:?}"
        );
        for (i, u) in self.model.undo.iter().enumerate() {
            if u.made_at > copied_at || self.model.undo_kept_until(i) <= self.now {
                continue;
            }
            for json in u.contents.iter().chain(u.restored.iter()) {
                assert!(
                    seen.contents.contains(json),
                    "promise 3 on the remote: the undo point of {} lost a session",
                    u.made_at
                );
            }
        }
        for a in &self.model.archived {
            if seen.contents.is_empty() {
                break;
            }
            assert!(
                seen.contents.contains(&a.holder)
                    || !self
                        .remote
                        .entries
                        .iter()
                        .any(|e| e.json.as_ref() == Some(&a.holder)),
                "promise 4 on the remote: the session holding archived {} is gone",
                a.url
            );
        }
    }
}
