//! The plans of the page's actions and running them: every action is a
//! list of `ffsession` command lines (with the global options the page was
//! started with) or the browser's own remote command line; the plan shows
//! them and what they say they would do, then they run as they are.

use std::ffi::OsString;

use anyhow::{anyhow, Result};
use ffsession::store::SnapshotId;
use maud::{html, Markup};

use super::layout::{safe_href, shell_line};
use super::pick::{picks, Take};
use super::App;
use crate::commands::naming::{self, snapshot_arg};
use crate::fmt::{count, escape};

/// Which program a step runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Program {
    Ffsession,
    Browser,
}

/// How a step is previewed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preview {
    /// Run as it is: it writes only into the page's own folder.
    Run,
    /// Run with `--dry-run`.
    DryRun,
    /// Only shown.
    Show,
}

pub struct Step {
    pub program: Program,
    pub args: Vec<OsString>,
    pub preview: Preview,
}

pub struct Plan {
    pub title: String,
    pub what: Vec<String>,
    pub steps: Vec<Step>,
}

impl Plan {
    /// What the plan does, as a short digest: the page's *Do it* carries
    /// the digest of the plan it showed, and runs only a plan with the same
    /// (one that did not change since: the picks of another tab, say).
    pub fn digest(&self) -> String {
        use std::hash::{Hash, Hasher};
        // The same in one process (the server's), which is all it needs.
        let mut h = std::hash::DefaultHasher::new();
        self.title.hash(&mut h);
        self.what.hash(&mut h);
        for step in &self.steps {
            (step.program as u8, step.preview as u8).hash(&mut h);
            step.args.hash(&mut h);
        }
        format!("{:016x}", h.finish())
    }
}

pub fn ff(args: &[&dyn AsRef<std::ffi::OsStr>], preview: Preview) -> Step {
    Step {
        program: Program::Ffsession,
        args: args.iter().map(|a| a.as_ref().to_owned()).collect(),
        preview,
    }
}

/// The plan of `action`.
pub fn make_plan(app: &App, action: &str, snapshot: Option<i64>) -> Result<Plan> {
    let work = &app.work_dir;
    // A snapshot the store does not hold is not found (404), not a plan
    // whose first step fails.
    let need_snapshot = || -> Result<i64> {
        let id = snapshot.ok_or_else(|| anyhow!("no snapshot named"))?;
        app.store()?.snapshot(SnapshotId(id))?;
        Ok(id)
    };
    Ok(match action {
        "restore" => {
            let id = need_snapshot()?;
            Plan {
                title: format!("Restore snapshot #{id}"),
                what: vec![format!("The browser reopens snapshot #{id} at its next start. The profile's current session is backed up first (the undo point); refused while the browser runs.")],
                steps: vec![ff(&[&"restore", &snapshot_arg(id)], Preview::DryRun)],
            }
        }
        "rescue" => {
            let id = need_snapshot()?;
            let out = work.join(format!("rescued-{id}.jsonlz4"));
            Plan {
                title: format!("Rescue snapshot #{id}"),
                what: vec![format!("Every complete tab of the damaged snapshot #{id} is recovered into a session file, which the browser then reopens at its next start (with an undo point; refused while the browser runs).")],
                steps: vec![
                    ff(&[&"rescue", &snapshot_arg(id), &"-o", &out], Preview::Run),
                    ff(&[&"restore", &out], Preview::DryRun),
                ],
            }
        }
        "add" => add_plan(app)?,
        "open" => {
            let picks = picks(app)?;
            if picks.is_empty() {
                return Err(anyhow!("nothing picked"));
            }
            // The profile's folder, not its name: the running browser
            // with that folder is the one that opens them.
            let profile: Vec<OsString> = match &app.profile_dir {
                Some(p) => vec!["--profile".into(), p.clone().into_os_string()],
                None => Vec::new(),
            };
            let mut what = vec!["The running browser opens the picked tabs now (one new window per picked window), through its own remote command line.".to_owned()];
            let mut steps = Vec::new();
            let mut loose: Vec<OsString> = Vec::new();
            for p in &picks {
                let urls: Vec<&str> = p
                    .tabs
                    .iter()
                    .map(|(_, u)| u.as_str())
                    .filter(|u| match openable(u) {
                        Ok(()) => true,
                        Err(why) => {
                            what.push(format!("left out ({why}): {}", escape(u)));
                            false
                        }
                    })
                    .collect();
                if urls.is_empty() {
                    continue;
                }
                if p.take.is_window() {
                    let mut args = profile.clone();
                    for (i, u) in urls.iter().enumerate() {
                        args.push(if i == 0 { "--new-window" } else { "--new-tab" }.into());
                        args.push(u.into());
                    }
                    steps.push(Step {
                        program: Program::Browser,
                        args,
                        preview: Preview::Show,
                    });
                } else {
                    for u in urls {
                        loose.push("--new-tab".into());
                        loose.push(u.into());
                    }
                }
            }
            if !loose.is_empty() {
                let mut args = profile.clone();
                args.extend(loose);
                steps.push(Step {
                    program: Program::Browser,
                    args,
                    preview: Preview::Show,
                });
            }
            Plan {
                title: "Open now".to_owned(),
                what,
                steps,
            }
        }
        other => return Err(anyhow!("no such action: {other:?}")),
    })
}

/// Why the browser is not given `url`, if it is not: only web addresses,
/// and none holding a character a command line cannot carry (a NUL ends
/// an argument) or that could be read as something else (other control
/// characters).
fn openable(url: &str) -> Result<(), &'static str> {
    if safe_href(url).is_none() {
        return Err("not a web address");
    }
    if url.chars().any(char::is_control) {
        return Err("it holds a control character");
    }
    Ok(())
}

/// The command line of `step`, as a user would type it (shown with its
/// control and bidirectional characters escaped, as every value of the
/// page).
pub fn line(app: &App, step: &Step, dry: bool) -> String {
    let mut words: Vec<OsString> = match step.program {
        Program::Ffsession => {
            let mut w: Vec<OsString> = vec!["ffsession".into()];
            w.extend(app.globals.iter().cloned());
            w
        }
        Program::Browser => vec![app.browser_bin.clone().into()],
    };
    words.extend(step.args.iter().cloned());
    if dry {
        words.push("--dry-run".into());
    }
    escape(&shell_line(words)).into_owned()
}

/// What a step printed.
pub struct Ran {
    pub line: String,
    pub ok: bool,
    pub out: String,
}

pub fn run(app: &App, step: &Step, dry: bool) -> Ran {
    let line = line(app, step, dry);
    let mut cmd = match step.program {
        Program::Ffsession => {
            let mut c = std::process::Command::new(&app.exe);
            // In the page's private folder, where nothing is named like a
            // snapshot (every snapshot is `snapshot:N`, every file an
            // absolute path, but a command must not depend on it).
            c.args(&app.globals).current_dir(&app.work_dir);
            // A remote store's password, asked once at the start: the
            // command cannot ask it (no terminal), and a command line is
            // readable by every user of the machine.
            if let Some(p) = &app.password {
                c.env("FFSESSION_PASSWORD", p);
            }
            c
        }
        Program::Browser => {
            let mut c = std::process::Command::new(&app.browser_bin);
            c.env_remove("FFSESSION_PASSWORD");
            c
        }
    };
    cmd.args(&step.args).stdin(std::process::Stdio::null());
    if dry {
        cmd.arg("--dry-run");
    }
    if step.program == Program::Browser {
        // A browser that was not running stays in the foreground until it
        // is closed: started, not waited for.
        return match cmd.spawn() {
            Ok(mut child) => {
                std::thread::spawn(move || child.wait());
                Ran { line, ok: true, out: "started".to_owned() }
            }
            Err(e) => Ran { line, ok: false, out: format!("could not start it: {e} (ffsession ui --browser-bin PROGRAM names the browser)") },
        };
    }
    match cmd.output() {
        Ok(o) => Ran {
            line,
            ok: o.status.success(),
            out: format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
        },
        Err(e) => Ran {
            line,
            ok: false,
            out: e.to_string(),
        },
    }
}

pub fn ran(r: &Ran) -> Markup {
    html! {
        div.ran {
            code { "$ " (r.line) }
            pre class=(if r.ok { "ok" } else { "failed" }) { (r.out) }
        }
    }
}

/// What "add at next start" takes of one snapshot: its id, its whole
/// open windows (`--window`), and the `extract` options naming the rest.
type FromSnapshot = (i64, Vec<usize>, Vec<(&'static str, String)>);

/// "Add at next start": for each snapshot, `extract` its picked open
/// windows, and in a second file (`--window` mixes with no other choice)
/// its picked tabs, closed tabs, closed windows and archived tabs, which
/// the extracted session holds as open ones; `merge` them into the current
/// session, `restore` the result.
fn add_plan(app: &App) -> Result<Plan> {
    let picks = picks(app)?;
    if picks.is_empty() {
        return Err(anyhow!("nothing picked"));
    }
    let mut what = vec!["The picked windows and tabs (closed and archived ones reopened as open ones) are merged into the profile's current session (tabs it has already left out), which the browser opens at its next start. The current session is backed up first (the undo point); refused while the browser runs.".to_owned()];
    let mut by_snapshot: Vec<FromSnapshot> = Vec::new();
    for p in &picks {
        let i = match by_snapshot.iter().position(|(s, _, _)| *s == p.snapshot) {
            Some(i) => i,
            None => {
                by_snapshot.push((p.snapshot, Vec::new(), Vec::new()));
                by_snapshot.len() - 1
            }
        };
        let (_, windows, others) = &mut by_snapshot[i];
        match &p.take {
            Take::Window(n) if !windows.contains(n) => windows.push(*n),
            Take::Window(_) => {}
            take => {
                for o in take.options() {
                    if !others.contains(&o) {
                        others.push(o);
                    }
                }
            }
        }
    }
    let mut steps = Vec::new();
    let mut files: Vec<OsString> = Vec::new();
    for (id, windows, others) in &by_snapshot {
        let mut extract = |suffix: &str, options: Vec<(&str, String)>| {
            if options.is_empty() {
                return;
            }
            let out = app.work_dir.join(format!("picked-{id}-{suffix}.jsonlz4"));
            let mut args: Vec<OsString> = vec!["extract".into(), snapshot_arg(id).into()];
            for (flag, v) in options {
                args.push(flag.into());
                args.push(v.into());
            }
            args.push("-o".into());
            args.push(out.clone().into_os_string());
            steps.push(Step {
                program: Program::Ffsession,
                args,
                preview: Preview::Run,
            });
            files.push(out.into_os_string());
        };
        extract(
            "windows",
            windows
                .iter()
                .map(|n| ("--window", n.to_string()))
                .collect(),
        );
        extract("tabs", others.clone());
        let closed_windows = others
            .iter()
            .filter(|(f, _)| *f == "--closed-window")
            .count();
        what.push(format!(
            "from snapshot #{id}: {}, {}",
            count(
                windows.len() + closed_windows,
                "whole window",
                "whole windows"
            ),
            count(others.len() - closed_windows, "tab", "tabs")
        ));
    }
    let merged = app.work_dir.join("merged.jsonlz4");
    let mut args: Vec<OsString> = vec!["merge".into(), naming::CURRENT.into()];
    args.extend(files);
    args.extend([
        OsString::from("--dedupe"),
        OsString::from("-o"),
        merged.clone().into_os_string(),
    ]);
    steps.push(Step {
        program: Program::Ffsession,
        args,
        preview: Preview::Run,
    });
    steps.push(ff(&[&"restore", &merged], Preview::DryRun));
    Ok(Plan {
        title: "Add at next start".to_owned(),
        what,
        steps,
    })
}
