//! The command line: global options and the list of subcommands.

use std::cell::Cell;
use std::path::PathBuf;

use clap::builder::Resettable;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::commands;

/// Keep Firefox sessions safe and make them useful.
///
/// ffsession reads Firefox's session files (sessionstore.jsonlz4 and the files in
/// sessionstore-backups/) to show what they hold: windows, tabs, their URLs and
/// titles, closed tabs and windows. Without a FILE argument, commands read the
/// newest valid session file of the default Firefox profile and say which one
/// they used.
#[derive(Debug, Parser)]
#[command(name = "ffsession", version, max_term_width = 100)]
#[command(after_help = "Examples:
  ffsession profiles               list profiles and their session files
  ffsession info                   summarize the newest session
  ffsession tabs --format urls     every open tab's URL, one per line
  ffsession tabs --closed --json   open and recently closed tabs as JSON
  ffsession decompress recovery.jsonlz4 -o session.json --pretty
  ffsession backup --prune          snapshot every session file, then apply retention
  ffsession list                    the snapshots in the store, newest first
  ffsession stores                  the backup stores in the data directory
  ffsession --store /mnt/backup/default-release list   a store copied from elsewhere
  ffsession check                   read and verify every snapshot in the store
  ffsession restore 42              Firefox reopens snapshot 42 at its next start
  ffsession diff 42 current         tabs and windows changed since snapshot 42
  ffsession stats --plot tabs.svg   tab counts over time, as a table and a chart
  ffsession search example.com      tabs ever backed up whose title or URL match
  ffsession history https://example.org/   when that page was open, and where
  ffsession rescue recovery.jsonlz4 -o rescued.jsonlz4   the complete tabs of a damaged file
  ffsession tidy --archive-older-than 30d   close tabs unused for 30 days (kept in the store)
  ffsession extract current --window 2 -o w2.jsonlz4     one window as a session file
  ffsession merge a.jsonlz4 b.jsonlz4 -o both.jsonlz4    all windows of both

Exit status:
  0  success (also when the reader of stdout stops early, as `| head` does)
  1  an error in the input or the environment: a bad or missing file, no profile,
     Firefox running, a store locked past --lock-wait; `search`: no tab matches;
     `history`: the URL is in no snapshot
  2  a usage error: an unknown command or option, a missing or malformed value
  3  `backup`: the newest session file is damaged, or lost more than half of its
     tabs (the snapshot is kept and marked)
  4  `rescue`: nothing could be recovered
  5  `check`: the store is damaged
  6  `status`: something needs you (each said with what to do)")]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,

    #[command(subcommand)]
    pub command: Command,
}

/// Options every command takes.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Global options")]
pub struct GlobalArgs {
    /// Firefox profile to use: a name from profiles.ini or a profile folder path
    /// [default: the profile Firefox opens by default]
    #[arg(long, short = 'P', global = true, value_name = "NAME|PATH")]
    pub profile: Option<String>,

    /// Browser whose profiles to use: firefox, librewolf, floorp, waterfox,
    /// zen, or a Firefox edition sharing Firefox's profiles.ini
    /// (developer-edition, nightly, beta, esr) [default: every one found,
    /// Firefox's first]
    #[arg(
        long,
        short = 'B',
        global = true,
        value_name = "NAME",
        env = "FFSESSION_BROWSER"
    )]
    pub browser: Option<String>,

    /// Folder holding the browser's profiles.ini [default: every folder
    /// where the browsers keep it, as each decides: `ffsession profiles`
    /// lists them]
    #[arg(long, global = true, value_name = "DIR", env = "FFSESSION_FIREFOX_DIR")]
    pub firefox_dir: Option<PathBuf>,

    /// Backup store folder, or a remote store (sftp://, s3://, webdav[s]://,
    /// a remote's name from the config file), read through a local copy
    /// [default: `store` from the config file, else <data dir>/<profile name>,
    /// the data dir being ~/.local/share/ffsession, ~/Library/Application
    /// Support/ffsession or %LOCALAPPDATA%\ffsession\data]
    #[arg(
        long,
        global = true,
        value_name = "DIR|LOCATION",
        env = "FFSESSION_STORE"
    )]
    pub store: Option<PathBuf>,

    /// File whose first line is the password of a remote store (else
    /// FFSESSION_PASSWORD, else a prompt)
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        env = "FFSESSION_PASSWORD_FILE"
    )]
    pub password_file: Option<PathBuf>,

    /// Configuration file [default: ~/.config/ffsession/config.toml,
    /// ~/Library/Application Support/ffsession/config.toml or
    /// %APPDATA%\ffsession\config\config.toml]
    #[arg(long, global = true, value_name = "FILE", env = "FFSESSION_CONFIG")]
    pub config: Option<PathBuf>,

    /// How long a command that changes the store waits for another ffsession
    /// (the watch service, say) to release it, like 30s or 5m; 0 fails at once
    #[arg(long, global = true, value_name = "DURATION", default_value = "1m", value_parser = crate::lock_wait::parse_lock_wait)]
    pub lock_wait: std::time::Duration,

    /// Say nothing on stderr but warnings and errors: no notes of which
    /// session file was read, what was written, or a wait for the store lock
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,
}

/// The commands by task, each with a line for the top-level help (`ffsession
/// COMMAND --help` has the rest). Every command is in one group (a test
/// checks it).
pub const GROUPS: &[(&str, &[(&str, &str)])] = &[
    (
        "Read sessions",
        &[
            (
                "profiles",
                "Firefox's profiles and the session files in each",
            ),
            (
                "info",
                "Summarize a session: windows, tabs, closed ones, when written",
            ),
            (
                "tabs",
                "List a session's tabs (text, JSON, CSV, Markdown, URLs, bookmarks)",
            ),
            ("diff", "What changed between two sessions or snapshots"),
        ],
    ),
    (
        "Back up",
        &[
            (
                "backup",
                "Store every session file of the profile, verified",
            ),
            ("watch", "Back up whenever Firefox writes its session"),
            (
                "status",
                "Is it working? The service, last snapshot, alarms, checks, copies",
            ),
            (
                "service",
                "Run `watch` in the background at login (systemd, launchd, Task Scheduler)",
            ),
            ("list", "The snapshots in the store, newest first"),
            ("stores", "The backup stores in the data directory"),
            (
                "stats",
                "Windows and tabs of each snapshot, as a table or a chart",
            ),
            ("search", "Find tabs by title or URL in every snapshot"),
            (
                "ui",
                "A local page: the timeline, snapshots, search, diff, pick what to bring back",
            ),
            (
                "history",
                "When a URL was open or closed, snapshot by snapshot",
            ),
            (
                "copy",
                "Send the store's new snapshots to a remote store, encrypted",
            ),
            (
                "remote",
                "The keys this machine keeps of remote stores: list, forget",
            ),
            (
                "check",
                "Check that every snapshot in the store can be restored",
            ),
            (
                "prune",
                "Remove the snapshots the retention policy does not keep",
            ),
            (
                "reindex",
                "Rebuild the tab index `search` and `history` use",
            ),
        ],
    ),
    (
        "Restore",
        &[(
            "restore",
            "Make Firefox reopen a snapshot or session file at its next start",
        )],
    ),
    (
        "Repair",
        &[
            (
                "rescue",
                "Recover every complete tab of a damaged session file",
            ),
            ("decompress", "A session file (mozlz4) as JSON"),
            ("compress", "Session JSON as a mozlz4 file Firefox reads"),
        ],
    ),
    (
        "Tidy",
        &[
            (
                "tidy",
                "Close tabs you no longer use, kept in the store, so Firefox starts faster",
            ),
            (
                "extract",
                "Some windows or tabs of a session as a session file",
            ),
            (
                "merge",
                "The windows of several sessions as one session file",
            ),
        ],
    ),
    (
        "Set up",
        &[
            (
                "completions",
                "A completion script for bash, zsh, fish, PowerShell or elvish",
            ),
            ("man", "The manual page, as roff"),
        ],
    ),
];

/// The top-level help's list of commands, grouped by task.
fn grouped_commands() -> String {
    let width = GROUPS
        .iter()
        .flat_map(|(_, commands)| commands.iter())
        .map(|(name, _)| name.len())
        .max()
        .unwrap_or(0);
    let mut text = String::new();
    for (group, commands) in GROUPS {
        text.push_str(&format!("{group}:\n"));
        for (name, summary) in *commands {
            text.push_str(&format!("  {name:<width$}  {summary}\n"));
        }
        text.push('\n');
    }
    text
}

/// The command line as clap sees it, with the commands grouped by task in
/// the top-level help.
///
/// The global options are global only in the command that is parsed: at the
/// top they are ordinary options, and each command adds them as global
/// options of its own when it is built (see [`Lazy`]). clap would otherwise
/// copy all seven into each of the 25 commands at every start, which took
/// about 50 of the 310 page faults of `ffsession info` on a small session.
/// clap still merges the values given before and after the command's name,
/// as it does for global options (an option given after the name wins).
pub fn command() -> clap::Command {
    let cmd = Cli::command().help_template(format!(
        "{{before-help}}{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{}Global options:\n{{options}}{{after-help}}",
        grouped_commands()
    ));
    if WHOLE.get() {
        cmd
    } else {
        cmd.mut_args(|arg| arg.global(false))
    }
}

/// [`command`] with every command's options in place from the start, as
/// completion scripts and the manual need them: clap copies the commands
/// into its `help` command's tree before it adds deferred options, so
/// `ffsession help service install` would be missing from the scripts.
pub fn whole_command() -> clap::Command {
    WHOLE.set(true);
    let cmd = command();
    WHOLE.set(false);
    cmd
}

/// Parse the command line (clap's errors and `--help` exit here).
pub fn parse() -> Cli {
    let matches = command().get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// A command's options, then the global options as its own, added to
/// clap's command tree only when that command is the one parsed or its help
/// shown (`Command::defer`; all at once, without the global options, which
/// clap copies down itself there, in [`whole_command`]): building all 25
/// commands' options up front took about 60 of the 300 page faults of
/// `ffsession --version`.
#[derive(Debug)]
pub struct Lazy<T>(pub T);

impl<T: FromArgMatches> FromArgMatches for Lazy<T> {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches(matches).map(Lazy)
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(matches)
    }
}

thread_local! {
    /// Set while [`whole_command`] builds: every command's options are
    /// added at once.
    static WHOLE: Cell<bool> = const { Cell::new(false) };
}

/// `add` applied to `cmd` at once in [`whole_command`]; else `add_then_global`
/// (`add`, then the global options) when `cmd` is built.
fn deferred(
    cmd: clap::Command,
    add: fn(clap::Command) -> clap::Command,
    add_then_global: fn(clap::Command) -> clap::Command,
) -> clap::Command {
    if WHOLE.get() {
        add(cmd)
    } else {
        cmd.defer(add_then_global)
    }
}

/// The global options added to `cmd` (global from it down), which keeps
/// its own description (clap's derive would give it [`GlobalArgs`]'s doc
/// comment).
fn add_global(cmd: clap::Command) -> clap::Command {
    let kept = |text: Option<&clap::builder::StyledStr>| {
        text.cloned().map_or(Resettable::Reset, Resettable::Value)
    };
    let (about, long_about) = (kept(cmd.get_about()), kept(cmd.get_long_about()));
    GlobalArgs::augment_args(cmd)
        .about(about)
        .long_about(long_about)
}

impl<T: Args> Args for Lazy<T> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        deferred(cmd, T::augment_args, |cmd| add_global(T::augment_args(cmd)))
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        deferred(cmd, T::augment_args_for_update, |cmd| {
            add_global(T::augment_args_for_update(cmd))
        })
    }

    fn group_id() -> Option<clap::Id> {
        T::group_id()
    }
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    Profiles(Lazy<commands::profiles::ProfilesArgs>),
    Backup(Lazy<commands::backup::BackupArgs>),
    Copy(Lazy<commands::copy::CopyArgs>),
    Remote(Lazy<commands::remote::RemoteArgs>),
    Check(Lazy<commands::check::CheckArgs>),
    List(Lazy<commands::list::ListArgs>),
    Stores(Lazy<commands::stores::StoresArgs>),
    Stats(Lazy<commands::stats::StatsArgs>),
    Prune(Lazy<commands::prune::PruneArgs>),
    Restore(Lazy<commands::restore::RestoreArgs>),
    Watch(Lazy<commands::watch::WatchArgs>),
    Status(Lazy<commands::status::StatusArgs>),
    Service(Lazy<commands::service::ServiceArgs>),
    Info(Lazy<commands::info::InfoArgs>),
    Tabs(Lazy<commands::tabs::TabsArgs>),
    Diff(Lazy<commands::diff::DiffArgs>),
    Search(Lazy<commands::search::SearchArgs>),
    History(Lazy<commands::history::HistoryArgs>),
    Reindex(Lazy<commands::reindex::ReindexArgs>),
    Rescue(Lazy<commands::rescue::RescueArgs>),
    Tidy(Lazy<commands::tidy::TidyArgs>),
    Extract(Lazy<commands::extract::ExtractArgs>),
    Merge(Lazy<commands::merge::MergeArgs>),
    Decompress(Lazy<commands::decompress::DecompressArgs>),
    Compress(Lazy<commands::compress::CompressArgs>),
    Completions(Lazy<commands::completions::CompletionsArgs>),
    Man(Lazy<commands::man::ManArgs>),
    Ui(Lazy<commands::ui::UiArgs>),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        command().debug_assert();
    }

    /// The ids of `cmd`'s options and those of its commands, recursively.
    fn options(cmd: &clap::Command, path: &str, into: &mut Vec<String>) {
        for arg in cmd.get_arguments() {
            into.push(format!("{path} {}", arg.get_id()));
        }
        for sub in cmd.get_subcommands() {
            options(sub, &format!("{path} {}", sub.get_name()), into);
        }
    }

    #[test]
    fn deferred_options_are_all_there_once_built() {
        let (mut lazy, mut whole) = (command(), whole_command());
        // Deferred: no options before a build, not even the global ones,
        // which are ordinary options at the top.
        let info = lazy.find_subcommand("info").unwrap();
        assert_eq!(info.get_arguments().count(), 0);
        assert!(lazy.get_arguments().all(|a| !a.is_global_set()));
        lazy.build();
        whole.build();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        options(&lazy, "", &mut a);
        options(&whole, "", &mut b);
        assert!(a.contains(&" info json".to_owned()), "{a:?}");
        assert!(
            a.contains(&" service install lock_wait".to_owned()),
            "{a:?}"
        );
        a.sort();
        b.sort();
        // The same options (clap's `help` command is filled in from the
        // commands as they were before the build, so it is left out).
        a.retain(|o| !o.starts_with(" help "));
        b.retain(|o| !o.starts_with(" help "));
        assert_eq!(a, b);
    }

    /// The global options as parsed from `args`.
    fn global(args: &[&str]) -> GlobalArgs {
        let args = std::iter::once("ffsession").chain(args.iter().copied());
        let matches = command().try_get_matches_from(args).unwrap();
        Cli::from_arg_matches(&matches).unwrap().global
    }

    #[test]
    fn global_options_count_before_and_after_the_command_at_any_depth() {
        use std::time::Duration;
        let before = global(&["--store", "a", "--lock-wait", "5s", "-q", "info"]);
        let after = global(&["info", "--store", "a", "--lock-wait", "5s", "-q"]);
        let nested = global(&[
            "service",
            "install",
            "--store",
            "a",
            "--lock-wait",
            "5s",
            "-q",
        ]);
        for g in [before, after, nested] {
            assert_eq!(g.store, Some(PathBuf::from("a")));
            assert_eq!(g.lock_wait, Duration::from_secs(5));
            assert!(g.quiet);
        }
        // The command's own default does not undo a value given before it.
        assert_eq!(
            global(&["--lock-wait", "5s", "backup"]).lock_wait,
            Duration::from_secs(5)
        );
        assert_eq!(global(&["backup"]).lock_wait, Duration::from_secs(60));
        assert!(!global(&["backup"]).quiet);
        // Given on both sides, the one after the command's name wins.
        let both = global(&["-P", "a", "--store", "a", "list", "--store", "b"]);
        assert_eq!(both.store, Some(PathBuf::from("b")));
        assert_eq!(both.profile.as_deref(), Some("a"));
    }

    #[test]
    fn every_command_is_in_one_group_of_the_top_level_help() {
        let names: Vec<&str> = GROUPS
            .iter()
            .flat_map(|(_, commands)| commands.iter().map(|(name, _)| *name))
            .collect();
        let cmd = command();
        for sub in cmd.get_subcommands() {
            let n = names.iter().filter(|&&name| name == sub.get_name()).count();
            assert_eq!(n, 1, "`{}` is in {n} groups", sub.get_name());
        }
        for name in names {
            assert!(cmd.find_subcommand(name).is_some(), "no command `{name}`");
        }
    }
}
