//! The library's hints ([`ffsession::Hint`]) in words: every command a hint
//! names is written from the command context of the run ([`GlobalArgs`]),
//! so it carries the run's `--browser`, `--profile` and `--store`, is
//! shell-quoted, and runs as printed. The library names no command.

use std::ffi::OsStr;
use std::path::Path;

use ffsession::Hint;

use crate::cli::GlobalArgs;
use crate::context::absolute;

impl GlobalArgs {
    /// `hint` in words, with every command it names complete.
    pub fn word(&self, hint: &Hint) -> String {
        let cmd = |args: &[&OsStr]| self.quoted(args);
        let os = |s: &'static str| OsStr::new(s);
        let file = |p: &Path| absolute(p);
        let profiles = cmd(&[os("profiles")]);
        let list = cmd(&[os("list")]);
        let rescue = |f: &Path| {
            let f = file(f);
            cmd(&[os("rescue"), OsStr::new(&f), os("-o"), os("OUT")])
        };
        match hint {
            Hint::Advice(text) => (*text).to_owned(),
            Hint::CheckPath => {
                format!("check the path; {profiles} lists the session files Firefox keeps")
            }
            Hint::FolderNotFile => "that is a folder, not a session file: name a file in it (sessionstore.jsonlz4, sessionstore-backups/recovery.jsonlz4), or pass a profile folder as --profile DIR".into(),
            Hint::AlreadyCompressed => format!(
                "it is already a session file; use {} to get JSON",
                cmd(&[os("decompress"), os("FILE")])
            ),
            Hint::Damaged { file } => format!(
                "the file is damaged; {} recovers its complete tabs, or use another session file or backup ({profiles} lists them)",
                rescue(file)
            ),
            Hint::NotASession { file } => format!(
                "the file is damaged or is not a Firefox session; {} recovers the complete tabs of a damaged one, or use another session file or backup ({profiles} lists them)",
                rescue(file)
            ),
            Hint::NotZen => format!(
                "the file is damaged or is not Zen's; Zen keeps copies in zen-sessions-backup/ ({profiles} lists them), and {list} shows its backups"
            ),
            Hint::NoProfile => format!(
                "name a session file (e.g. {}), pass --profile PATH, or set FFSESSION_FIREFOX_DIR to the folder holding profiles.ini",
                cmd(&[os("info"), os("samples/session.jsonlz4")])
            ),
            Hint::BadProfilesIni => {
                "the file is damaged; pass --profile PATH to name the profile folder directly".into()
            }
            Hint::UnknownProfile => {
                format!("{profiles} lists the profiles; a profile folder path works too")
            }
            Hint::ChooseOutput => {
                "choose another output file with -o; the input stays as it is".into()
            }
            Hint::NothingRescued => format!(
                "the damage starts before the first complete tab; try another session file or backup ({profiles}, {list})"
            ),
            Hint::RescueReadsSessions => format!(
                "rescue reads Firefox session files (sessionstore.jsonlz4, sessionstore-backups/*.jsonlz4, or their JSON); {profiles} lists a profile's"
            ),
            Hint::CheckProfilePath => format!("check the profile path; {profiles} lists them"),
            Hint::RestoreNotASession { file: f } => {
                let f = file(f);
                format!(
                    "{} shows what it holds; a damaged session file gives back its complete tabs with {}, then {}",
                    cmd(&[os("info"), OsStr::new(&f)]),
                    cmd(&[os("rescue"), OsStr::new(&f), os("-o"), os("OUT")]),
                    cmd(&[os("restore"), os("OUT")]),
                )
            }
            Hint::ListVerified => format!("{list} shows which snapshots verified ok"),
            Hint::TakeBackup => format!("take one with {}", cmd(&[os("backup")])),
            Hint::CheckAndBackUp => format!(
                "{} names what is damaged; the next {} of the same files heals what it still has",
                cmd(&[os("check")]),
                cmd(&[os("backup")])
            ),
            Hint::UndoNeedsStore => "pass --undo-store DIR (a writable folder) to keep the undo snapshot there, or restore into a new, empty profile folder".into(),
            Hint::StoreLink => format!(
                "remove the link (ffsession makes `lock` itself) or put the real file or folder in its place; {} lists every link in the store",
                cmd(&[os("check")])
            ),
            Hint::StoreFolderLink => "give the real folder's path (--store, or `store` in the config file), or put the store folder itself where the link is".into(),
            Hint::Reindex => format!(
                "run {} to build it again from the snapshots (backups and restores do not need it)",
                cmd(&[os("reindex")])
            ),
            Hint::RebuildCatalog => format!(
                "{} builds the catalog again from the manifests",
                cmd(&[os("reindex"), os("--catalog")])
            ),
            Hint::ReadBack => format!(
                "the disk may be failing: run {}, and copy the store to another disk",
                cmd(&[os("check")])
            ),
            Hint::AllowEmpty => {
                "loosen the rules, or pass --allow-empty to close every tab anyway".into()
            }
            Hint::TidyNotEditable { file: f } => {
                let f = file(f);
                format!(
                    "{} says what is wrong; {} recovers the complete tabs of a damaged file",
                    cmd(&[os("info"), OsStr::new(&f)]),
                    cmd(&[os("rescue"), OsStr::new(&f), os("-o"), os("OUT")]),
                )
            }
            Hint::TidyDamagedCurrent { file } => format!(
                "{} recovers its complete tabs; tidy again once the profile's newest file reads",
                rescue(file)
            ),
            Hint::ListTabs => format!(
                "{} lists the windows and tabs it holds",
                cmd(&[os("tabs"), os("SOURCE")])
            ),
            Hint::TidyBadQuery => "in FTS5 syntax (--fts), put a phrase or text with punctuation in double quotes, and close every quote; without --fts words match as written".into(),
            Hint::RemoteFull { location } => format!(
                "the server is out of space: free some (`{}`), then copy again; what was sent is kept",
                self.command_at(location, &[os("prune")])
            ),
            Hint::RemoteMissing { location } => format!(
                "create it with {}, which sends the local snapshots",
                cmd(&[os("copy"), os("--to"), OsStr::new(location)])
            ),
            Hint::WrongPassword => "give the password this remote was created with (FFSESSION_PASSWORD, --password-file, or the prompt); nothing was written".into(),
            Hint::RemoteDamaged { location } => format!(
                "run `{}`, then {} from a machine that has these snapshots to send them again",
                self.command_at(location, &[os("check"), os("--read-data")]),
                cmd(&[os("copy"), os("--to"), OsStr::new(location)])
            ),
            Hint::HostKey {
                changed: false,
                command,
                ..
            } => format!(
                "run `{command}`: it shows the server's key; answer yes if it is your server's (compare it with `ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub` run on the server), then run this command again"
            ),
            Hint::HostKey {
                changed: true,
                host,
                command,
            } => format!(
                "if the server's key changed on purpose, remove the old one with `ssh-keygen -R '{host}'`, then accept the new one with `{command}` (compare its fingerprint with the server's); otherwise do not connect"
            ),
        }
    }
}

/// Every command a hint prints parses as a command of this CLI and acts on
/// the run's browser, profile and store (the guarantee a scan of the
/// sources for flag names once gave).
#[cfg(all(test, unix))]
mod tests {
    use std::path::PathBuf;

    use clap::FromArgMatches;
    use ffsession::Hint;

    use crate::cli::{Cli, GlobalArgs};

    const REMOTE: &str = "sftp://me@host:2222/backups/mes sessions";

    /// One of each kind of hint. The `match` fails to compile when a kind
    /// is added to the library, until it is added here too.
    fn every_hint() -> Vec<Hint> {
        let file = || PathBuf::from("Mes sessions/it's damaged.jsonlz4");
        let all = vec![
            Hint::Advice("check the path"),
            Hint::CheckPath,
            Hint::FolderNotFile,
            Hint::AlreadyCompressed,
            Hint::Damaged { file: file() },
            Hint::NotASession { file: file() },
            Hint::NotZen,
            Hint::NoProfile,
            Hint::BadProfilesIni,
            Hint::UnknownProfile,
            Hint::ChooseOutput,
            Hint::NothingRescued,
            Hint::RescueReadsSessions,
            Hint::CheckProfilePath,
            Hint::RestoreNotASession { file: file() },
            Hint::ListVerified,
            Hint::TakeBackup,
            Hint::CheckAndBackUp,
            Hint::UndoNeedsStore,
            Hint::StoreLink,
            Hint::StoreFolderLink,
            Hint::Reindex,
            Hint::RebuildCatalog,
            Hint::ReadBack,
            Hint::AllowEmpty,
            Hint::TidyNotEditable { file: file() },
            Hint::TidyDamagedCurrent { file: file() },
            Hint::ListTabs,
            Hint::TidyBadQuery,
            Hint::RemoteFull {
                location: REMOTE.into(),
            },
            Hint::RemoteMissing {
                location: REMOTE.into(),
            },
            Hint::WrongPassword,
            Hint::RemoteDamaged {
                location: REMOTE.into(),
            },
            Hint::HostKey {
                host: "[host]:2222".into(),
                changed: false,
                command: "ssh -p 2222 me@host".into(),
            },
            Hint::HostKey {
                host: "[host]:2222".into(),
                changed: true,
                command: "ssh -p 2222 me@host".into(),
            },
        ];
        for hint in &all {
            match hint {
                Hint::Advice(_)
                | Hint::CheckPath
                | Hint::FolderNotFile
                | Hint::AlreadyCompressed
                | Hint::Damaged { .. }
                | Hint::NotASession { .. }
                | Hint::NotZen
                | Hint::NoProfile
                | Hint::BadProfilesIni
                | Hint::UnknownProfile
                | Hint::ChooseOutput
                | Hint::NothingRescued
                | Hint::RescueReadsSessions
                | Hint::CheckProfilePath
                | Hint::RestoreNotASession { .. }
                | Hint::ListVerified
                | Hint::TakeBackup
                | Hint::CheckAndBackUp
                | Hint::UndoNeedsStore
                | Hint::StoreLink
                | Hint::StoreFolderLink
                | Hint::Reindex
                | Hint::RebuildCatalog
                | Hint::ReadBack
                | Hint::AllowEmpty
                | Hint::TidyNotEditable { .. }
                | Hint::TidyDamagedCurrent { .. }
                | Hint::ListTabs
                | Hint::TidyBadQuery
                | Hint::RemoteFull { .. }
                | Hint::RemoteMissing { .. }
                | Hint::WrongPassword
                | Hint::RemoteDamaged { .. }
                | Hint::HostKey { .. } => {}
            }
        }
        all
    }

    /// The command line `words` as this CLI parses it.
    fn parse(words: &[String]) -> Result<Cli, clap::Error> {
        let matches = crate::cli::whole_command().try_get_matches_from(words)?;
        Cli::from_arg_matches(&matches)
    }

    /// The spans of `text` in backquotes that are a command of this CLI.
    pub(crate) fn commands(text: &str) -> Vec<&str> {
        text.split('`')
            .skip(1)
            .step_by(2)
            .filter(|span| span.starts_with("ffsession "))
            .collect()
    }

    fn context(flags: &[&str]) -> GlobalArgs {
        let mut words: Vec<String> = vec!["ffsession".into()];
        words.extend(flags.iter().map(|&f| f.to_owned()));
        words.push("list".into());
        parse(&words).unwrap().global
    }

    #[test]
    fn every_printed_command_runs_on_the_same_profile_and_store() {
        let contexts = [
            context(&[]),
            context(&["--browser", "librewolf"]),
            context(&["--profile", "/tmp/Mes profils/p 1"]),
            context(&["--store", "stores/it's mine"]),
            context(&[
                "--browser",
                "zen",
                "-P",
                "work",
                "--store",
                REMOTE,
                "--password-file",
                "pass word",
            ]),
        ];
        let mut checked = 0;
        for global in &contexts {
            let want = global.context();
            for hint in every_hint() {
                let text = global.word(&hint);
                assert!(!text.is_empty(), "{hint:?}");
                for command in commands(&text) {
                    let words = shlex::split(command)
                        .unwrap_or_else(|| panic!("{hint:?}: not shell words: {command}"));
                    let cli = parse(&words)
                        .unwrap_or_else(|e| panic!("{hint:?}: `{command}` does not parse: {e}"));
                    let got = cli.global.context();
                    // Only a remote's own hints move to the remote's store.
                    // A copy to the run's own store (a remote) is a copy
                    // from the profile's store.
                    let mut own = want.clone();
                    if let Some(at) = own.iter().position(|w| w == "--store") {
                        if words
                            .windows(2)
                            .any(|w| w[0] == "--to" && w[1] == own[at + 1])
                        {
                            own.drain(at..at + 2);
                        }
                    }
                    assert!(
                        got == want || got == own || got == global.context_at(Some(REMOTE)),
                        "{hint:?}: `{command}` acts on {got:?}, not {want:?}"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 100, "{checked} commands checked");
    }

    /// A command written on another store (a remote's own hints) keeps
    /// the profile and names that store; a copy to the run's own store
    /// leaves the run's store out.
    #[test]
    fn commands_on_another_store_and_copies_to_the_run_store() {
        let global = context(&["-P", "/tmp/Mes profils/p 1", "--store", "/tmp/s"]);
        assert_eq!(
            global.quoted(&["backup"]),
            "`ffsession --profile '/tmp/Mes profils/p 1' --store /tmp/s backup`"
        );
        assert_eq!(
            global.quoted_at("s3://b/p", &["check", "--read-data"]),
            "`ffsession --profile '/tmp/Mes profils/p 1' --store s3://b/p check --read-data`"
        );
        assert_eq!(
            global.quoted(&["copy", "--to", "/tmp/s"]),
            "`ffsession --profile '/tmp/Mes profils/p 1' copy --to /tmp/s`"
        );
    }
}
