//! `ffsession profiles`: Firefox profiles, their session files, and whether
//! Firefox is running on them.

use std::io::{self, Write};

use anyhow::Result;
use clap::Args;
use ffsession::format::FileSummary;
use ffsession::profile::{self, LockState, Profile};
use ffsession::sources::{self, SkippedFile, SourceFile};
use ffsession::{Format, Summary};
use serde::Serialize;

use crate::cli::GlobalArgs;
use crate::fmt;

/// List the profiles of Firefox and of the browsers built from it
/// (LibreWolf, Floorp, Waterfox, Zen; Snap and Flatpak installs), grouped
/// by browser and folder, with their folder, which is the default (of each
/// install: Firefox's Developer Edition or Nightly share Firefox's
/// profiles.ini), whether the browser is running on it, and every session file it holds (size, last update,
/// windows and tabs, or what is wrong with it), newest session first (by the
/// session's own time, Firefox's last update of it; unreadable files last).
///
/// With --profile, shows only that profile.
#[derive(Debug, Args)]
pub struct ProfilesArgs {
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct ProfileJson {
    #[serde(flatten)]
    profile: Profile,
    /// The browser and its package (`Firefox`, `Firefox Nightly`, `Zen
    /// (Flatpak)`).
    browser: String,
    /// The browser alone (`Firefox`, `Zen`).
    #[serde(skip)]
    app: &'static str,
    /// The Firefox edition the profile was made for (`Developer Edition`,
    /// `Nightly`, ...), when its name says so.
    #[serde(skip)]
    edition: Option<&'static str>,
    /// The folder holding the profiles.ini that lists it.
    root: Option<std::path::PathBuf>,
    lock: LockState,
    session_files: Vec<FileJson>,
    /// What a backup leaves out, and why.
    skipped_files: Vec<SkippedFile>,
}

#[derive(Serialize)]
struct FileJson {
    #[serde(flatten)]
    file: SourceFile,
    format: Option<Format>,
    #[serde(flatten)]
    summary: Option<Summary>,
    /// Zen's sessions file: its spaces and tabs.
    #[serde(skip_serializing_if = "Option::is_none")]
    zen: Option<ffsession::zen::ZenSummary>,
    error: Option<String>,
}

fn inspect(file: SourceFile) -> FileJson {
    let read = FileSummary::read(&file.path).map(|s| (s.format, s.summary, s.zen));
    match read {
        Ok((format, summary, zen)) => FileJson {
            file,
            format: Some(format),
            summary: Some(summary),
            zen,
            error: None,
        },
        Err(e) => FileJson {
            file,
            format: None,
            summary: None,
            zen: None,
            error: Some(sources::short_reason(&e)),
        },
    }
}

pub fn run(global: &GlobalArgs, args: ProfilesArgs) -> Result<()> {
    let roots = global.firefox_roots()?;
    let paths: Vec<_> = roots.iter().map(|r| r.path.clone()).collect();
    let profiles: Vec<(Option<usize>, Profile)> = match &global.profile {
        Some(_) => {
            let p = global.profile()?;
            // The root that lists it, if one does.
            let root = profile::list_roots(&paths).ok().and_then(|all| {
                all.into_iter()
                    .find(|(_, q)| q.path == p.path)
                    .map(|(r, _)| r)
            });
            vec![(root, p)]
        }
        None => global
            .listed_profiles()?
            .into_iter()
            .map(|(r, p)| (Some(r), p))
            .collect(),
    };
    let mut report = Vec::new();
    for (root, p) in profiles {
        let listing = sources::scan(&p.path).unwrap_or_default();
        let mut session_files: Vec<FileJson> = listing.files.into_iter().map(inspect).collect();
        // Newest session first; a file that does not say when (unreadable)
        // after, in Firefox's order (the sort is stable).
        session_files.sort_by_key(|f| {
            std::cmp::Reverse(f.summary.as_ref().and_then(|s| s.timestamps.last_update))
        });
        let label = root.map_or_else(|| "Firefox".to_owned(), |r| roots[r].label());
        // Firefox's Developer Edition, Nightly ...: installs of their own
        // in Firefox's profiles.ini.
        let edition = root
            .filter(|&r| roots[r].browser == "Firefox")
            .and_then(|_| profile::edition(&p.name));
        report.push(ProfileJson {
            app: root.map_or("Firefox", |r| roots[r].browser),
            browser: match edition {
                Some(e) => label.replacen("Firefox", &format!("Firefox {e}"), 1),
                None => label,
            },
            edition,
            root: root.map(|r| roots[r].path.clone()),
            lock: profile::lock_state(&p.path),
            profile: p,
            session_files,
            skipped_files: listing.skipped,
        });
    }
    if args.json {
        return super::print_json(&report);
    }
    let mut out = io::stdout().lock();
    // Grouped by the browser and folder that list them, when there are several.
    let several = report
        .iter()
        .any(|p| p.root.is_some() && p.root != report[0].root);
    for (i, p) in report.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        if several && (i == 0 || p.root != report[i - 1].root) {
            if let Some(root) = &p.root {
                writeln!(out, "== {}: {}", p.browser, fmt::path(root))?;
            }
        }
        let default = match (p.profile.is_default, p.edition) {
            (true, Some(e)) => format!(" (default of {} {e})", p.app),
            (true, None) => " (default)".to_owned(),
            (false, Some(e)) => format!(" ({} {e})", p.app),
            (false, None) => String::new(),
        };
        let app = p.app;
        let lock = match p.lock {
            LockState::NotRunning => "not running".to_owned(),
            LockState::Running { pid: Some(pid) } => format!("{app} running (pid {pid})"),
            LockState::Running { pid: None } => format!("{app} running"),
            LockState::Stale { pid } => format!("not running (stale lock of pid {pid})"),
        };
        writeln!(out, "{}{default}: {lock}", fmt::escape(&p.profile.name))?;
        writeln!(out, "  {}", fmt::path(&p.profile.path))?;
        if !p.profile.path.is_dir() {
            writeln!(out, "  (folder missing)")?;
        } else if p.session_files.is_empty() {
            writeln!(out, "  no session files")?;
        }
        let width = p
            .session_files
            .iter()
            .map(|f| fmt::escape(&f.file.name).chars().count())
            .max()
            .unwrap_or(0);
        for f in &p.session_files {
            let what = match (&f.summary, &f.error) {
                (Some(s), _) if f.zen.is_some() => {
                    let z = f.zen.as_ref().map_or((0, 0), |z| (z.spaces, z.tabs));
                    format!(
                        "{}  {}, {} (Zen's)",
                        fmt::local_time_or_unknown(s.timestamps.last_update),
                        fmt::count(z.0, "space", "spaces"),
                        fmt::count(z.1, "tab", "tabs")
                    )
                }
                (Some(s), _) => format!(
                    "{}  {}, {}",
                    fmt::local_time_or_unknown(s.timestamps.last_update),
                    fmt::count(s.windows, "window", "windows"),
                    fmt::count(s.tabs, "tab", "tabs")
                ),
                (None, Some(e)) => format!("UNREADABLE: {}", fmt::escape(e)),
                (None, None) => String::new(),
            };
            writeln!(
                out,
                "  {:width$}  {:>10}  {what}",
                fmt::escape(&f.file.name),
                fmt::size(f.file.size)
            )?;
        }
        for f in &p.skipped_files {
            writeln!(
                out,
                "  skipped {}: {}",
                fmt::path(&f.path),
                fmt::escape(&f.reason.to_string())
            )?;
        }
    }
    out.flush()?;
    Ok(())
}
