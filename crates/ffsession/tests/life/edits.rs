//! The simulator's edits of the profile: `tidy`, and archived tabs brought
//! back (`extract --archived`, `merge`, `restore FILE`).

use super::*;

impl Life {
    /// Record an undo point made now: the profile's whole session files
    /// then, and for a restore what it put in place (`LIFE_DEBUG` says
    /// where in the simulator it was made).
    #[track_caller]
    pub(crate) fn push_undo(&mut self, contents: Vec<Vec<u8>>, restored: Option<Vec<u8>>) {
        if std::env::var_os("LIFE_DEBUG").is_some() {
            let by = std::panic::Location::caller();
            eprintln!("undo pushed at {} by {}:{}", self.now, by.file(), by.line());
        }
        self.model.undo.push(Undo {
            made_at: self.now,
            contents,
            restored,
        });
    }

    /// `tidy` (tabs not seen for some days closed): the closed tabs stay
    /// found and restorable (promise 4), the session written is the source
    /// less those tabs, of the tidy's time.
    pub(crate) fn tidy(&mut self) -> bool {
        if self.ff.running {
            return false;
        }
        let Ok(current) = tidy::load_current(&self.ff.dir) else {
            return false;
        };
        let session = Editable::new(&current.data).unwrap();
        let days = self.rng.u64(1..40);
        let rules = TidyRules {
            archive_older_than_ms: Some(days * DAY),
            ..TidyRules::default()
        };
        let Ok(plan) = tidy::plan(&session, &rules, self.now, false) else {
            return false;
        };
        if plan.is_noop() {
            return false;
        }
        let source = current
            .source
            .path
            .strip_prefix(&self.ff.dir)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let Some(Written::Session { json: holder, .. }) = self.ff.files.get(&source).cloned()
        else {
            panic!("tidy read {source}, which the simulator did not write whole");
        };
        let contents = self.whole_files();
        let mut store = self.store();
        let report = tidy::apply(
            &plan,
            &session,
            current.data.json(),
            &mut store,
            PROFILE,
            &self.ff.dir,
            self.now,
        )
        .unwrap();
        drop(store);
        // Every file of the profile was stored first: the undo point.
        let files: Vec<String> = self.ff.files.keys().cloned().collect();
        for name in files {
            let (json, session_ms) = match self.ff.files[&name].clone() {
                Written::Session { json, last_update } => (Some(json), last_update),
                Written::Damaged { mtime } => (None, mtime),
            };
            self.model.entries.push(Entry {
                file: name.clone(),
                json,
                session_ms,
                role: firefox::role(&name),
                stored_at: self.now,
            });
        }
        assert_eq!(report.archived, plan.closed.len());
        for c in &plan.closed {
            self.model.archived.push(Archived {
                url: c.url.clone(),
                holder: holder.clone(),
            });
        }
        self.push_undo(contents, None);
        let written = self
            .ff
            .rescan_after_restore()
            .expect("tidy wrote a session");
        let closed: BTreeSet<u64> = plan
            .closed
            .iter()
            .map(|c| c.url.rsplit('/').next().unwrap().parse().unwrap())
            .collect();
        let want: Vec<u64> = firefox::tabs_of(&holder)
            .into_iter()
            .map(|t| t.0)
            .filter(|t| !closed.contains(t))
            .collect();
        let got: Vec<u64> = firefox::tabs_of(&written)
            .into_iter()
            .map(|t| t.0)
            .collect();
        assert_eq!(
            got, want,
            "the tidied session is not its source less the closed tabs"
        );
        assert_eq!(firefox::last_update_of(&written), Some(self.now));
        true
    }

    /// The whole session files of the profile now.
    pub(crate) fn whole_files(&self) -> Vec<Vec<u8>> {
        self.ff
            .files
            .values()
            .filter_map(|w| match w {
                Written::Session { json, .. } => Some(json.clone()),
                Written::Damaged { .. } => None,
            })
            .collect()
    }

    /// Bring archived tabs back as a person does: `extract --archived` from
    /// the snapshot holding them, `merge` with the current session, `restore
    /// merged.jsonlz4`. Firefox then reopens the current tabs and them.
    pub(crate) fn bring_back_archived(&mut self) -> bool {
        if self.ff.running || self.model.archived.is_empty() {
            return false;
        }
        let a = self.model.archived[self.rng.usize(0..self.model.archived.len())].clone();
        let mut store = self.store();
        let marks: Vec<_> = store
            .archived_tabs()
            .unwrap()
            .into_iter()
            .filter(|t| t.url == a.url)
            .collect();
        let holder = marks.last().expect("an archived tab has its mark").snapshot;
        let tabs = store.archived_in(holder).unwrap();
        let data =
            SessionData::from_bytes("holder.json", store.read_json(holder).unwrap()).unwrap();
        let extracted =
            tidy::extract(&Editable::new(&data).unwrap(), &Selection::Archived(&tabs)).unwrap();
        let Ok(current) = tidy::load_current(&self.ff.dir) else {
            return false;
        };
        let extracted = SessionData::from_bytes("extracted.json", extracted.json).unwrap();
        let merged = tidy::merge(
            &[
                Editable::new(&current.data).unwrap(),
                Editable::new(&extracted).unwrap(),
            ],
            true,
            Some(self.now),
        )
        .unwrap();
        let file = self.scratch.path().join("merged.jsonlz4");
        fs::write(&file, ffsession::format::compress(&merged.json).unwrap()).unwrap();
        let contents = self.whole_files();
        let info = restore::import(&mut store, &file, self.now).unwrap();
        assert_eq!(store.read_json(info.id).unwrap(), merged.json);
        self.model.entries.push(Entry {
            file: info.file_name.clone(),
            json: Some(merged.json.clone()),
            session_ms: self.now,
            role: firefox::role(&info.file_name),
            stored_at: self.now,
        });
        let plan = restore::plan(&store, info.id, &self.ff.dir).unwrap();
        let report = restore::execute(&plan, &mut store, None, PROFILE, self.now).unwrap();
        self.add_entries(&report.undo);
        drop(store);
        let written = self.ff.rescan_after_restore();
        assert!(
            written.as_ref() == Some(&merged.json),
            "the merged session was not restored"
        );
        let back: Vec<u64> = firefox::tabs_of(&merged.json)
            .into_iter()
            .map(|t| t.0)
            .collect();
        let id: u64 = a.url.rsplit('/').next().unwrap().parse().unwrap();
        assert!(back.contains(&id), "{} is not back", a.url);
        self.push_undo(contents, Some(merged.json));
        true
    }
}
