//! `ffsession diff`: what changed between two sessions.

use std::io::{self, BufWriter, Write};

use anyhow::Result;
use clap::Args;
use ffsession::diff::{self, SessionDiff, TabChange};
use ffsession::export::one_line;
use ffsession::SessionData;

use super::naming::{self, Named, Takes};
use crate::cli::GlobalArgs;
use crate::error::UserError;
use crate::fmt;

/// Show what changed between two sessions: tabs added, tabs removed, tabs
/// moved to another window, windows opened and windows closed.
///
/// A and B are each a snapshot id from the backup store (see `ffsession
/// list`), `latest` for the store's newest session (by the session's own
/// time, as `restore latest` means it), a session file (mozlz4 or JSON), or
/// `current` for the profile's newest session file; a bare id, `latest` or
/// `current` that is also a file here is refused (write `snapshot:N`,
/// `snapshot:latest`, `profile:current` or `./FILE`). When A is a newer
/// session than B (by `session.lastUpdate`), a note on stderr says so. Only open tabs count; a tab is its current page's URL,
/// and two tabs on the same page are two tabs. Windows are matched by the
/// pages they share.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession diff 41 42                     what changed between two snapshots
  ffsession diff 42 current                what changed since snapshot 42
  ffsession diff latest current            what changed since the newest backup
  ffsession diff old.jsonlz4 new.jsonlz4 --json
  ffsession diff 42 current --urls > lost.txt   the URLs of the tabs closed since")]
pub struct DiffArgs {
    /// The earlier session: snapshot id, `latest`, session file, or `current`
    #[arg(value_name = "A")]
    pub a: String,

    /// The later session: snapshot id, `latest`, session file, or `current`
    #[arg(value_name = "B")]
    pub b: String,

    /// Print JSON instead of text
    #[arg(long, conflicts_with = "urls")]
    pub json: bool,

    /// Print only the URLs of removed tabs, one per line (to reopen them)
    #[arg(long)]
    pub urls: bool,
}

/// What an A or B argument names ([`naming::parse`]).
type Side = Named;

/// Snapshot ids, `latest`, `current` and files.
const TAKES: Takes = Takes {
    latest: true,
    current: true,
};

/// A loaded session and how to name it.
struct Loaded {
    label: String,
    data: SessionData,
}

fn load(global: &GlobalArgs, side: &Side) -> Result<Loaded> {
    Ok(match side {
        Side::Snapshot(_) | Side::Latest => {
            let config = global.config()?;
            let store = super::open_existing_store(&global.chosen_store_dir(&config)?, false)?;
            let id = &match side {
                Side::Snapshot(id) => *id,
                _ => ffsession::restore::latest(&store)?.0.id,
            };
            let info = store.snapshot(*id)?;
            let json = store.read_json(*id)?;
            let label = format!("snapshot #{id}");
            Loaded {
                data: SessionData::from_bytes(format!("{label} ({})", info.file_name), json)?,
                label,
            }
        }
        Side::Current => {
            let data = super::load_session(global, None)?;
            Loaded {
                label: format!("current ({})", data.path().display()),
                data,
            }
        }
        Side::File(path) => Loaded {
            label: path.display().to_string(),
            data: SessionData::read(path)?,
        },
    })
}

/// The diff with what was compared, as `--json` prints it.
#[derive(serde::Serialize)]
struct Report<'s> {
    a_source: &'s str,
    b_source: &'s str,
    #[serde(flatten)]
    diff: &'s SessionDiff<'s>,
}

pub fn run(global: &GlobalArgs, args: DiffArgs) -> Result<()> {
    let (side_a, side_b) = (
        naming::parse(&args.a, TAKES)?,
        naming::parse(&args.b, TAKES)?,
    );
    if side_a == Side::Current && side_b == Side::Current {
        return Err(UserError::with_hint(
            "`current` compared with itself",
            "compare `current` with a snapshot id or a session file",
        ));
    }
    let a = load(global, &side_a)?;
    let b = load(global, &side_b)?;
    let (session_a, session_b) = (a.data.parse()?, b.data.parse()?);
    let d = diff::diff(&session_a, &session_b);
    if let (Some(ta), Some(tb)) = (session_a.session.last_update, session_b.session.last_update) {
        if ta > tb {
            crate::ui::note(format_args!(
                "note: A is the newer session (last updated {}, B {}): what is \"added\" was in B only",
                fmt::local_time_or_unknown(Some(ta)),
                fmt::local_time_or_unknown(Some(tb))
            ));
        }
    }

    if args.json {
        return super::print_json(&Report {
            a_source: &a.label,
            b_source: &b.label,
            diff: &d,
        });
    }
    let mut out = BufWriter::new(io::stdout().lock());
    if args.urls {
        for url in d.removed.iter().filter_map(|t| t.url) {
            writeln!(out, "{}", one_line(url))?;
        }
        out.flush()?;
        return Ok(());
    }
    write_text(&mut out, &a.label, &b.label, &d)?;
    out.flush()?;
    Ok(())
}

fn write_text(out: &mut impl Write, a: &str, b: &str, d: &SessionDiff<'_>) -> io::Result<()> {
    writeln!(out, "a: {a}")?;
    writeln!(out, "b: {b}")?;
    writeln!(
        out,
        "{} added, {} removed, {} moved; {} opened, {} closed ({}, {} -> {}, {})",
        fmt::count(d.added.len(), "tab", "tabs"),
        d.removed.len(),
        d.moved.len(),
        fmt::count(d.windows_opened.len(), "window", "windows"),
        d.windows_closed.len(),
        fmt::count(d.a.windows, "window", "windows"),
        fmt::count(d.a.tabs, "tab", "tabs"),
        fmt::count(d.b.windows, "window", "windows"),
        fmt::count(d.b.tabs, "tab", "tabs"),
    )?;
    if d.is_empty() {
        return Ok(());
    }
    let tab = |t: &TabChange<'_>| {
        format!(
            "window {} #{:<3} {}",
            t.window,
            t.position,
            title_url(t.title, t.url)
        )
    };
    section(out, "removed", &d.removed, tab)?;
    section(out, "added", &d.added, tab)?;
    section(out, "moved", &d.moved, |m| {
        format!(
            "window {} -> {}  {}",
            m.from_window,
            m.to_window,
            title_url(m.title, m.url)
        )
    })?;
    for (name, windows) in [
        ("windows closed", &d.windows_closed),
        ("windows opened", &d.windows_opened),
    ] {
        section(out, name, windows, |w| {
            format!(
                "window {}: {}  {}",
                w.window,
                fmt::count(w.tabs, "tab", "tabs"),
                one_line(w.title.unwrap_or("")),
            )
        })?;
    }
    Ok(())
}

/// A tab's title and URL on one line.
fn title_url(title: Option<&str>, url: Option<&str>) -> String {
    format!(
        "{}  {}",
        one_line(title.unwrap_or("")),
        one_line(url.unwrap_or(""))
    )
}

/// A heading with the number of items, then one indented line per item;
/// nothing when there are no items.
fn section<T>(
    out: &mut impl Write,
    name: &str,
    items: &[T],
    line: impl Fn(&T) -> String,
) -> io::Result<()> {
    if items.is_empty() {
        return Ok(());
    }
    writeln!(out, "\n{name} ({}):", items.len())?;
    for item in items {
        writeln!(out, "  {}", line(item))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_has_a_section_per_kind_of_change() {
        use ffsession::diff::{SideCounts, TabMove, WindowChange};
        let tab = |window, position, url| TabChange {
            window,
            position,
            url: Some(url),
            title: Some("T\nitle"),
        };
        let window = |window, tabs| WindowChange {
            window,
            tabs,
            title: Some("W"),
        };
        let d = SessionDiff {
            a: SideCounts {
                windows: 2,
                tabs: 3,
            },
            b: SideCounts {
                windows: 1,
                tabs: 1,
            },
            added: vec![tab(1, 2, "https://a.test/")],
            removed: vec![tab(2, 1, "https://r.test/"), tab(2, 12, "https://s.test/")],
            moved: vec![TabMove {
                url: Some("https://m.test/"),
                title: None,
                from_window: 2,
                to_window: 1,
            }],
            windows_opened: vec![],
            windows_closed: vec![window(2, 1)],
        };
        let mut out = Vec::new();
        write_text(&mut out, "A", "B", &d).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "a: A\nb: B\n\
             1 tab added, 2 removed, 1 moved; 0 windows opened, 1 closed (2 windows, 3 tabs -> 1 window, 1 tab)\n\
             \nremoved (2):\n  window 2 #1   T itle  https://r.test/\n  window 2 #12  T itle  https://s.test/\n\
             \nadded (1):\n  window 1 #2   T itle  https://a.test/\n\
             \nmoved (1):\n  window 2 -> 1    https://m.test/\n\
             \nwindows closed (1):\n  window 2: 1 tab  W\n"
        );
    }
}
