//! `ffsession tidy`: close stale and duplicate tabs (kept in the store) and
//! trim the rest, so Firefox starts faster.

use std::io::{self, BufWriter, Write};

use anyhow::Result;
use clap::Args;
use ffsession::profile::{lock_state, LockState};
use ffsession::tidy::{self, Editable, Reason, TidyError, TidyPlan, TidyRules};

use crate::cli::GlobalArgs;
use crate::fmt;

/// Close tabs you no longer use without losing them, so Firefox starts faster.
///
/// Firefox's start-up time grows with the number of tabs it restores (about
/// 1.4 ms per tab with Firefox ESR 153): closing tabs is the strong lever.
/// Dropping bytes per tab (--trim-history, --drop-payload) is the weak one:
/// making every tab 27 times heavier cost only about 10% more restore time.
///
/// Works on the profile's current session (its newest session file). Shows
/// the plan first: per window, tabs before and after and the session's size;
/// each tab closed and why. Pinned tabs, the selected tab of each window and
/// tabs in named groups stay unless --include-pinned, --include-selected or
/// --include-grouped. Without rules, reports what each rule would save.
///
/// Applying refuses while Firefox runs on the profile, and holds Firefox's
/// profile lock while it works. It first snapshots the profile's session
/// files into the store (the undo point: `ffsession restore ID` brings every
/// tab back), records the closed tabs as archived (`ffsession tabs
/// --archived`, `search`, `history` show them), then writes the tidied
/// session so that Firefox opens it at its next start (as `restore` does).
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession tidy                                 what each rule would save
  ffsession tidy --archive-older-than 30d --dry-run
  ffsession tidy --archive-older-than 30d --close-duplicates
  ffsession tabs --archived --format bookmarks > archived.html
  ffsession restore 42                           undo (the id tidy printed)")]
pub struct TidyArgs {
    /// Close tabs not used for this long (by lastAccessed): 30d, 12h, 2w, 1y
    #[arg(long, value_name = "DURATION", value_parser = parse_age, allow_hyphen_values = true)]
    pub archive_older_than: Option<u64>,

    /// Close all but the most recently used tab of each URL
    #[arg(long)]
    pub close_duplicates: bool,

    /// Keep at most N back/forward history entries each side of the current one
    #[arg(long, value_name = "N")]
    pub trim_history: Option<u64>,

    /// Drop recently closed tabs and windows
    #[arg(long)]
    pub drop_closed: bool,

    /// Drop data: favicons, form data and session storage (the weak lever:
    /// bytes per tab barely change Firefox's start-up time)
    #[arg(long)]
    pub drop_payload: bool,

    /// Pinned tabs may be closed too
    #[arg(long)]
    pub include_pinned: bool,

    /// The selected tab of a window may be closed too
    #[arg(long)]
    pub include_selected: bool,

    /// Tabs in named tab groups may be closed too
    #[arg(long)]
    pub include_grouped: bool,

    /// Allow rules that close every tab
    #[arg(long)]
    pub allow_empty: bool,

    /// Show the plan, change nothing
    #[arg(long, short = 'n')]
    pub dry_run: bool,

    /// Print the plan (and what was done) as JSON
    #[arg(long)]
    pub json: bool,
}

/// `--archive-older-than` (clap's value parser: a bad value is a usage
/// error naming the option), in ms.
fn parse_age(text: &str) -> Result<u64, String> {
    if let Some(rest) = text.strip_prefix('-') {
        return Err(format!(
            "an age is not negative: `--archive-older-than {rest}` closes tabs unused for {rest}"
        ));
    }
    tidy::parse_duration(text)
        .map_err(|_| "write a number and a unit: 30d, 12h, 2w, 90m, 45s or 1y".to_owned())
}

/// What one rule alone would save, as `tidy --json` says it: the rule as
/// the options that ask for it.
#[derive(serde::Serialize)]
struct Saving {
    rule: String,
    tabs_closed: usize,
    bytes_saved: u64,
}

/// `rules` as the options of this command that ask for them.
fn rule_options(rules: &TidyRules) -> String {
    let mut words = Vec::new();
    if let Some(ms) = rules.archive_older_than_ms {
        let (n, unit) = [(86_400_000, "d"), (3_600_000, "h"), (60_000, "m")]
            .into_iter()
            .find(|(size, _)| ms % size == 0)
            .map_or((ms / 1000, "s"), |(size, unit)| (ms / size, unit));
        words.push(format!("--archive-older-than {n}{unit}"));
    }
    if rules.close_duplicates {
        words.push("--close-duplicates".into());
    }
    if let Some(n) = rules.trim_history {
        words.push(format!("--trim-history {n}"));
    }
    if rules.drop_closed {
        words.push("--drop-closed".into());
    }
    if rules.drop_payload {
        words.push("--drop-payload".into());
    }
    words.join(" ")
}

pub fn run(global: &GlobalArgs, args: TidyArgs) -> Result<()> {
    let rules = TidyRules {
        archive_older_than_ms: args.archive_older_than,
        close_duplicates: args.close_duplicates,
        trim_history: args.trim_history,
        drop_closed: args.drop_closed,
        drop_payload: args.drop_payload,
        include_pinned: args.include_pinned,
        include_selected: args.include_selected,
        include_grouped: args.include_grouped,
    };
    let profile = global.profile()?;
    let will_apply = !args.dry_run && !rules.is_empty();
    if will_apply {
        if let LockState::Running { pid } = lock_state(&profile.path) {
            return Err(TidyError::FirefoxRunning {
                profile: profile.path.clone(),
                pid,
            }
            .into());
        }
    }
    let current = tidy::load_current(&profile.path)?;
    let data = &current.data;
    let session = Editable::new(data)?;
    let now = super::now_ms();
    let mut out = BufWriter::new(io::stdout().lock());
    if rules.is_empty() {
        let savings: Vec<Saving> = tidy::rule_savings(&session, now)?
            .into_iter()
            .map(|s| Saving {
                rule: rule_options(&s.rule),
                tabs_closed: s.tabs_closed,
                bytes_saved: s.bytes_saved,
            })
            .collect();
        if args.json {
            drop(out);
            return super::print_json(&savings);
        }
        writeln!(
            out,
            "{}: {}, {} of session JSON; no rule given. Each rule alone would save:",
            data.path().display(),
            fmt::count(session.tabs(), "tab", "tabs"),
            fmt::size(data.json().len() as u64)
        )?;
        for s in &savings {
            writeln!(
                out,
                "  {:<26} {:>6} tabs closed  {:>10} saved",
                s.rule,
                s.tabs_closed,
                fmt::size(s.bytes_saved)
            )?;
        }
        writeln!(
            out,
            "closing tabs is what makes Firefox start faster; see `ffsession tidy --help`"
        )?;
        out.flush()?;
        return Ok(());
    }
    let plan = tidy::plan(&session, &rules, now, args.allow_empty)?;
    if args.json {
        if !will_apply || plan.is_noop() {
            drop(out);
            return super::print_json(&plan);
        }
    } else {
        print_plan(&mut out, &plan, args.dry_run)?;
        out.flush()?;
    }
    if !will_apply {
        return Ok(());
    }
    if plan.is_noop() {
        writeln!(out, "nothing to do")?;
        out.flush()?;
        return Ok(());
    }
    let config = global.config()?;
    let mut store = super::create_store_waiting(global, &global.store_dir(&config, &profile)?)?;
    let report = tidy::apply(
        &plan,
        &session,
        data.json(),
        &mut store,
        &profile.name,
        &profile.path,
        now,
    )?;
    if args.json {
        drop(out);
        return super::print_json(&serde_json::json!({ "plan": plan, "done": report }));
    }
    writeln!(
        out,
        "archived {} in snapshot {} of {}",
        fmt::count(report.archived, "tab", "tabs"),
        report.undo,
        store.dir().display()
    )?;
    writeln!(
        out,
        "to undo: {}",
        global.command(&["restore", &format!("snapshot:{}", report.undo)])
    )?;
    writeln!(
        out,
        "done: Firefox opens the tidied session ({}) at its next start",
        fmt::count(plan.tabs_after, "tab", "tabs")
    )?;
    out.flush()?;
    Ok(())
}

fn print_plan(out: &mut impl Write, plan: &TidyPlan, dry_run: bool) -> io::Result<()> {
    writeln!(out, "tidy {}", plan.source.display())?;
    for w in &plan.windows {
        writeln!(
            out,
            "window {}: {} -> {} tabs, {} -> {}{}{}",
            w.window,
            w.tabs_before,
            w.tabs_after,
            fmt::size(w.bytes_before),
            fmt::size(w.bytes_after),
            if w.tabs_rewritten > 0 {
                format!(", {} trimmed", fmt::count(w.tabs_rewritten, "tab", "tabs"))
            } else {
                String::new()
            },
            if w.tabs_after == 0 && w.tabs_before > 0 {
                " (window closed)"
            } else {
                ""
            },
        )?;
        for c in plan.closed.iter().filter(|c| c.window == w.window) {
            let why = match &c.reason {
                Reason::Old { last_accessed } => {
                    format!(
                        "old, last used {}",
                        fmt::local_time_or_unknown(Some(*last_accessed))
                    )
                }
                Reason::Duplicate {
                    of_window,
                    of_position,
                } => format!("duplicate of {of_window}:{of_position}"),
            };
            writeln!(
                out,
                "  close {}:{}  {why}  {}  {}",
                c.window,
                c.position,
                ffsession::export::one_line(&c.title),
                c.url
            )?;
        }
    }
    if plan.closed_tabs_dropped > 0 || plan.closed_windows_dropped > 0 {
        writeln!(
            out,
            "drop {} and {}",
            fmt::count(
                plan.closed_tabs_dropped as usize,
                "recently closed tab",
                "recently closed tabs"
            ),
            fmt::count(
                plan.closed_windows_dropped as usize,
                "closed window",
                "closed windows"
            ),
        )?;
    }
    writeln!(
        out,
        "session: {} -> {} tabs, {} -> {} of JSON{}",
        plan.tabs_before,
        plan.tabs_after,
        fmt::size(plan.bytes_before),
        fmt::size(plan.bytes_after),
        if dry_run {
            " (dry run: nothing changed)"
        } else {
            ""
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each rule `tidy` without rules weighs is worded as options `tidy`
    /// takes, with the value assumed.
    #[test]
    fn each_rule_is_worded_as_options_tidy_takes() {
        let mut rules = TidyRules::each_alone().to_vec();
        rules.insert(
            1,
            TidyRules {
                archive_older_than_ms: Some(90 * 60_000),
                ..TidyRules::default()
            },
        );
        let words: Vec<String> = rules.iter().map(rule_options).collect();
        assert_eq!(words[0], "--archive-older-than 30d");
        assert_eq!(words[1], "--archive-older-than 90m");
        assert_eq!(words[3], "--trim-history 5");
        for w in &words {
            let argv = ["ffsession", "tidy"].into_iter().chain(w.split(' '));
            let matches = crate::cli::whole_command()
                .try_get_matches_from(argv)
                .unwrap_or_else(|e| panic!("{w}: {e}"));
            let (name, _) = matches.subcommand().unwrap();
            assert_eq!(name, "tidy");
        }
    }
}
