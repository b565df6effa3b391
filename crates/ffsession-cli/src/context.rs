//! The command context: the global options that chose the browser, the
//! profile, the store and the config of this run, so that every command
//! the CLI prints for the person to run next ("to undo: ...") names the
//! same profile and store, and runs as printed: each word shell-quoted,
//! each path made absolute (the command may be run from another folder).

use std::ffi::OsStr;
use std::path::Path;

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

    /// [`Self::command`] on the store at `store` (a remote's location or
    /// name) rather than this run's.
    pub fn command_at<S: AsRef<OsStr>>(&self, store: &str, args: &[S]) -> String {
        self.command_with(self.context_at(Some(store)), args)
    }

    fn command_with<S: AsRef<OsStr>>(&self, context: Vec<String>, args: &[S]) -> String {
        let mut words = vec!["ffsession".to_owned()];
        words.extend(context);
        words.extend(
            args.iter()
                .map(|a| a.as_ref().to_string_lossy().into_owned()),
        );
        join(&words)
    }
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
        if word.is_empty() || word.contains([' ', '\t', '"', '&', '|', '<', '>', '^']) {
            return format!("\"{}\"", word.replace('"', "\\\""));
        }
        return word.to_owned();
    }
    shlex::try_quote(word).map_or_else(
        // A NUL can be in no argument at all: shown escaped.
        |_| format!("{word:?}"),
        std::borrow::Cow::into_owned,
    )
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

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
