//! The command context: the global options that chose the browser, the
//! profile, the store and the config of this run, so that every command
//! the CLI prints for the person to run next ("to undo: ...") names the
//! same profile and store, and runs as printed: each word shell-quoted,
//! each path made absolute (the command may be run from another folder).
//! The library's hints are worded from it (`hints.rs`), and the CLI's own
//! messages write their commands with it ([`GlobalArgs::quoted`], or
//! [`quoted`] where no `GlobalArgs` is at hand).

use std::ffi::OsStr;
use std::path::Path;
use std::sync::OnceLock;

use crate::cli::GlobalArgs;

impl GlobalArgs {
    /// The global options of this run that say where things are, as words
    /// of a command line: `--browser`, `--profile` (a folder made absolute),
    /// `--firefox-dir`, `--store` (a folder made absolute; a remote's
    /// location or name as given), `--config`, `--password-file`.
    pub fn context(&self) -> Vec<String> {
        self.context_at(None)
    }

    /// [`Self::context`], with `store` (a remote's location or name) in
    /// place of this run's `--store`.
    pub(crate) fn context_at(&self, store: Option<&str>) -> Vec<String> {
        let mut words = Vec::new();
        let mut push = |flag: &str, value: String| {
            words.push(flag.to_owned());
            words.push(value);
        };
        if let Some(b) = &self.browser {
            push("--browser", b.clone());
        }
        if let Some(p) = &self.profile {
            // A name from profiles.ini stays a name; a folder becomes an
            // absolute path.
            let as_path = Path::new(p);
            let value = if as_path.is_dir() || p.contains(std::path::MAIN_SEPARATOR) {
                absolute(as_path)
            } else {
                p.clone()
            };
            push("--profile", value);
        }
        if let Some(d) = &self.firefox_dir {
            push("--firefox-dir", absolute(d));
        }
        if let Some(s) = store {
            push("--store", s.to_owned());
        } else if let Some(s) = &self.store {
            let text = s.to_string_lossy();
            let value = if ffsession::remote::Location::is_url(&text)
                || !s.exists() && !text.contains(std::path::MAIN_SEPARATOR)
            {
                text.into_owned()
            } else {
                absolute(s)
            };
            push("--store", value);
        }
        if let Some(c) = &self.config {
            push("--config", absolute(c));
        }
        if let Some(f) = &self.password_file {
            push("--password-file", absolute(f));
        }
        words
    }

    /// `ffsession`, this run's context, then `args`: a command the person
    /// can run as printed, in any folder.
    pub fn command<S: AsRef<OsStr>>(&self, args: &[S]) -> String {
        self.command_with(self.context(), args)
    }

    /// [`Self::command`] in backquotes, as messages name a command.
    pub fn quoted<S: AsRef<OsStr>>(&self, args: &[S]) -> String {
        format!("`{}`", self.command(args))
    }

    /// [`Self::quoted`] on the store at `store` (a remote's location or
    /// name) rather than this run's.
    pub fn quoted_at<S: AsRef<OsStr>>(&self, store: &str, args: &[S]) -> String {
        format!("`{}`", self.command_at(store, args))
    }

    /// [`Self::command`] on the store at `store` (a remote's location or
    /// name) rather than this run's.
    pub fn command_at<S: AsRef<OsStr>>(&self, store: &str, args: &[S]) -> String {
        self.command_with(self.context_at(Some(store)), args)
    }

    fn command_with<S: AsRef<OsStr>>(&self, mut context: Vec<String>, args: &[S]) -> String {
        let args: Vec<String> = args
            .iter()
            .map(|a| a.as_ref().to_string_lossy().into_owned())
            .collect();
        // A copy to the store this run read (a remote) is a copy from the
        // profile's own store: the command leaves out this run's --store.
        let to = args
            .windows(2)
            .find(|w| w[0] == "--to")
            .map(|w| w[1].as_str());
        if let Some(at) = context.iter().position(|w| w == "--store") {
            let store = self.store.as_deref().map(Path::to_string_lossy);
            if to.is_some() && (to == Some(context[at + 1].as_str()) || to == store.as_deref()) {
                context.drain(at..at + 2);
            }
        }
        let mut words = vec!["ffsession".to_owned()];
        words.extend(context);
        words.extend(args);
        join(&words)
    }
}

/// The command context of this run, set once by `main` after parsing.
static CONTEXT: OnceLock<GlobalArgs> = OnceLock::new();

/// Keep `global` as the command context of this run.
pub fn set(global: &GlobalArgs) {
    let _ = CONTEXT.set(global.clone());
}

/// This run's command context ([`set`] by `main`; no option before it).
pub fn global() -> &'static GlobalArgs {
    static NONE: OnceLock<GlobalArgs> = OnceLock::new();
    CONTEXT
        .get()
        .unwrap_or_else(|| NONE.get_or_init(GlobalArgs::default))
}

/// `` `ffsession ARGS` `` in this run's command context
/// ([`GlobalArgs::quoted`]), for a message that has no `GlobalArgs` at
/// hand.
pub fn quoted(args: &[&str]) -> String {
    global().quoted(args)
}

/// [`quoted`] on the store at `store` (a remote's location or name) rather
/// than this run's.
pub fn quoted_at(store: &str, args: &[&str]) -> String {
    global().quoted_at(store, args)
}

/// TEST HOOK (debug builds only, `FFSESSION_TEST_WHERE=1`): print, as
/// JSON, the profile folder and the store this command line acts on, as
/// the commands resolve them, and act on nothing. The CLI tests run every
/// command a run printed this way, from another folder, and check that it
/// acts where the run did (`tests/cli/common.rs`).
#[cfg(debug_assertions)]
pub fn print_where(global: &GlobalArgs) -> std::process::ExitCode {
    let real = |p: &Path| {
        std::fs::canonicalize(p).map_or_else(|_| absolute(p), |p| p.to_string_lossy().into_owned())
    };
    let profile = global.profile().ok();
    let store = global.config().ok().and_then(|config| {
        if let Some(remote) = global.remote_store(&config) {
            return Some(format!("remote {remote}"));
        }
        // A store named needs no profile; else the profile's own.
        match global.named_store(&config) {
            Some(dir) => Some(real(&dir)),
            None => global
                .store_dir(&config, profile.as_ref()?)
                .ok()
                .map(|d| real(&d)),
        }
    });
    let json = serde_json::json!({
        "profile": profile.map(|p| real(&p.path)),
        "store": store,
    });
    println!("{json}");
    std::process::ExitCode::SUCCESS
}

/// `path` made absolute (from the working folder), as text.
pub fn absolute(path: &Path) -> String {
    std::path::absolute(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

/// Words joined into one command line, each quoted as the shell needs.
pub fn join<S: AsRef<str>>(words: &[S]) -> String {
    words
        .iter()
        .map(|w| quote(w.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One word as the shell reads it back: POSIX quoting (shlex), or on
/// Windows double quotes around a word with spaces or quotes.
pub fn quote(word: &str) -> String {
    if cfg!(windows) {
        return quote_windows(word);
    }
    shlex::try_quote(word).map_or_else(
        // A NUL can be in no argument at all: shown escaped.
        |_| format!("{word:?}"),
        std::borrow::Cow::into_owned,
    )
}

/// [`quote`] on Windows: backslashes are path separators there, kept as
/// they are; a word with spaces or quotes goes in double quotes, its quotes
/// escaped.
fn quote_windows(word: &str) -> String {
    if word.is_empty() || word.contains([' ', '\t', '"', '&', '|', '<', '>', '^']) {
        return format!("\"{}\"", word.replace('"', "\\\""));
    }
    word.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Windows' quoting, tested on every platform: a path keeps its
    /// backslashes, a word with spaces or quotes is in double quotes.
    #[test]
    fn windows_words_are_quoted_as_windows_reads_them() {
        assert_eq!(quote_windows(r"C:\Users\me\p"), r"C:\Users\me\p");
        assert_eq!(
            quote_windows(r"C:\Users\me\Mes profils\p 1"),
            r#""C:\Users\me\Mes profils\p 1""#
        );
        assert_eq!(quote_windows(r#"say "hi""#), r#""say \"hi\"""#);
        assert_eq!(quote_windows(""), "\"\"");
    }

    #[cfg(unix)]
    #[test]
    fn words_come_back_as_the_shell_reads_them() {
        let words = [
            "ffsession",
            "--profile",
            "/home/me/Mes profils/p 1",
            "restore",
            "3",
            "it's",
        ];
        let line = join(&words);
        assert_eq!(shlex::split(&line).unwrap(), words);
        assert_eq!(join(&["restore", "3"]), "restore 3");
    }
}
