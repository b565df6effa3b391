//! The command line: global options and the list of subcommands.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

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
  ffsession search 'rust OR cargo'  tabs ever backed up whose title or URL match
  ffsession history https://example.org/   when that page was open, and where
  ffsession rescue recovery.jsonlz4 -o rescued.jsonlz4   the complete tabs of a damaged file
  ffsession tidy --archive-older-than 30d   close tabs unused for 30 days (kept in the store)
  ffsession extract current --window 2 -o w2.jsonlz4     one window as a session file
  ffsession merge a.jsonlz4 b.jsonlz4 -o both.jsonlz4    all windows of both")]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,

    #[command(subcommand)]
    pub command: Command,
}

/// Options every command takes.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Firefox profile to use: a name from profiles.ini or a profile folder path
    /// [default: the profile Firefox opens by default]
    #[arg(long, short = 'P', global = true, value_name = "NAME|PATH")]
    pub profile: Option<String>,

    /// Folder holding Firefox's profiles.ini
    /// [default: ~/.mozilla/firefox, ~/Library/Application Support/Firefox or %APPDATA%\Mozilla\Firefox]
    #[arg(long, global = true, value_name = "DIR", env = "FFSESSION_FIREFOX_DIR")]
    pub firefox_dir: Option<PathBuf>,

    /// Backup store folder, or a remote store (sftp://, s3://, webdav[s]://,
    /// a remote's name from the config file), read through a local copy
    /// [default: `store` from the config file, else <data dir>/ffsession/<profile name>]
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

    /// Configuration file [default: <config dir>/ffsession/config.toml]
    #[arg(long, global = true, value_name = "FILE", env = "FFSESSION_CONFIG")]
    pub config: Option<PathBuf>,

    /// How long a command that changes the store waits for another ffsession
    /// (the watch service, say) to release it, like 30s or 5m; 0 fails at once
    #[arg(long, global = true, value_name = "DURATION", default_value = "1m")]
    pub lock_wait: String,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    Profiles(commands::profiles::ProfilesArgs),
    Backup(commands::backup::BackupArgs),
    Copy(commands::copy::CopyArgs),
    Check(commands::check::CheckArgs),
    List(commands::list::ListArgs),
    Stores(commands::stores::StoresArgs),
    Stats(commands::stats::StatsArgs),
    Prune(commands::prune::PruneArgs),
    Restore(commands::restore::RestoreArgs),
    Watch(commands::watch::WatchArgs),
    Service(commands::service::ServiceArgs),
    Info(commands::info::InfoArgs),
    Tabs(commands::tabs::TabsArgs),
    Diff(commands::diff::DiffArgs),
    Search(commands::search::SearchArgs),
    History(commands::history::HistoryArgs),
    Reindex(commands::reindex::ReindexArgs),
    Rescue(commands::rescue::RescueArgs),
    Tidy(commands::tidy::TidyArgs),
    Extract(commands::extract::ExtractArgs),
    Merge(commands::merge::MergeArgs),
    Decompress(commands::decompress::DecompressArgs),
    Compress(commands::compress::CompressArgs),
}
