//! What the user can do about an error, as data.
//!
//! The library names no command and no option of any program built on it:
//! an error's `hint()` is a [`Hint`], and the front end words it. The
//! `ffsession` CLI words each one with the command context of the run (the
//! options that chose the browser, the profile and the store), so that every
//! command it prints runs as printed. [`Hint::Advice`] is advice that names
//! no command and no option, worded here once.

use std::path::PathBuf;

/// What the user can do about an error. As JSON (`check --json`), the
/// variant's name, with its data if it has any.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum Hint {
    /// Advice that names no command and no option.
    Advice(&'static str),
    /// A session file that does not exist: check the path, or list the
    /// session files each profile keeps.
    CheckPath,
    /// A folder named where a session file was expected: name a file in
    /// it, or pass the folder as the profile.
    FolderNotFile,
    /// The input is already a session file (mozlz4): decompress it to get
    /// its JSON.
    AlreadyCompressed,
    /// A damaged session file: rescue its complete tabs into another file,
    /// or use another session file or backup.
    Damaged {
        /// The damaged file.
        file: PathBuf,
    },
    /// A file that is damaged or is not a Firefox session.
    NotASession {
        /// The file.
        file: PathBuf,
    },
    /// A file that is damaged or is not Zen's sessions file.
    NotZen,
    /// No Firefox profile was found: name a session file, or the profile,
    /// or the folder holding profiles.ini.
    NoProfile,
    /// profiles.ini is damaged: name the profile folder directly.
    BadProfilesIni,
    /// No profile of that name: list the profiles.
    UnknownProfile,
    /// The output would overwrite the input: choose another output file.
    ChooseOutput,
    /// Nothing could be rescued from a file: try another session file or
    /// backup.
    NothingRescued,
    /// Rescue was given a file that is no session file.
    RescueReadsSessions,
    /// The profile folder does not exist: list the profiles.
    CheckProfilePath,
    /// Restore was given a file that is no session: see what it holds, or
    /// rescue it first.
    RestoreNotASession {
        /// The file.
        file: PathBuf,
    },
    /// A snapshot that cannot be restored: list which verified.
    ListVerified,
    /// The store has no snapshot: take one.
    TakeBackup,
    /// The store has only damaged snapshots: check it, and back up again.
    CheckAndBackUp,
    /// The undo snapshot has nowhere to go: name a store for it.
    UndoNeedsStore,
    /// A store link: remove it; the store check lists every link.
    StoreLink,
    /// The store folder is a link: give the real folder.
    StoreFolderLink,
    /// The tab index is missing or damaged: build it again.
    Reindex,
    /// The catalog is missing or disagrees with the manifests: build it
    /// again from them.
    RebuildCatalog,
    /// What was written did not read back: check the store, copy it away.
    ReadBack,
    /// Tidy would close every tab: loosen the rules, or allow it.
    AllowEmpty,
    /// Tidy was given a file it cannot edit.
    TidyNotEditable {
        /// The file.
        file: PathBuf,
    },
    /// The profile's newest session file is damaged: rescue it first.
    TidyDamagedCurrent {
        /// The file.
        file: PathBuf,
    },
    /// Nothing matched the picks: list the windows and tabs of the source.
    ListTabs,
    /// A search query tidy could not parse.
    TidyBadQuery,
    /// A remote store is full: prune it, then copy again.
    RemoteFull {
        /// The remote's location.
        location: String,
    },
    /// A remote store that does not exist yet: copy to it.
    RemoteMissing {
        /// The remote's location.
        location: String,
    },
    /// The password of a remote store is wrong.
    WrongPassword,
    /// A remote store misses objects: check it, and copy again.
    RemoteDamaged {
        /// The remote's location.
        location: String,
    },
    /// The server's SSH host key is not known, or changed.
    HostKey {
        /// The host, as `known_hosts` names it.
        host: String,
        /// Whether a different key is known for it.
        changed: bool,
        /// The `ssh` command line that shows the key and accepts it.
        command: String,
    },
}

#[cfg(test)]
mod tests {
    /// Advice names no command and no option: those are the front end's.
    #[test]
    fn advice_names_no_command() {
        let src = [
            include_str!("error.rs"),
            include_str!("profile.rs"),
            include_str!("backup.rs"),
            include_str!("restore.rs"),
            include_str!("rescue/mod.rs"),
            include_str!("remote/error.rs"),
            include_str!("store/error.rs"),
            include_str!("store/search.rs"),
            include_str!("tidy/mod.rs"),
        ];
        let mut seen = 0;
        for file in src {
            for advice in file.split("Hint::Advice(").skip(1) {
                seen += 1;
                let text = advice.split("\")").next().unwrap();
                assert!(
                    !text.contains("`ffsession") && !text.contains(" --") && !text.contains("(--"),
                    "advice naming a command or option: {text}"
                );
            }
        }
        assert!(seen > 20, "{seen} pieces of advice found");
    }
}
