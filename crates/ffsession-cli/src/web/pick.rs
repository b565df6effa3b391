//! Picking tabs, windows and groups across snapshots, and bringing them
//! back: every action is first a plan (what will happen, the command lines
//! that do the same, and their `--dry-run` answer), then runs exactly those
//! command lines: `ffsession extract`, `merge`, `rescue`, `restore` (undo
//! point, refused while the browser runs), or the browser's own remote
//! command (`firefox --profile DIR --new-tab URL`).

use std::ffi::OsString;
use std::sync::Arc;

use anyhow::{anyhow, Result};
use axum::extract::{Query, State};
use axum::response::Redirect;
use axum::Form;
use ffsession::session::{TabFilter, TabState};
use ffsession::store::SnapshotId;
use ffsession::SessionData;
use maud::{html, Markup};

use super::layout::{csrf, page, safe_href, shell_line, title_url};
use super::{blocking, App, WebError};

/// Something picked.
#[derive(Debug, Clone)]
pub struct Pick {
    /// The form value that named it.
    pub value: String,
    /// The snapshot it is in.
    pub snapshot: i64,
    /// An open window (1-based) picked whole, which `extract --window`
    /// can take; `None` for tabs and groups.
    pub window: Option<usize>,
    /// What it is, for people.
    pub label: String,
    /// Its tabs: title and URL.
    pub tabs: Vec<(String, String)>,
}

/// The pick a form value names: `w:ID:N` (an open window), `t:ID:N:P`,
/// `c:ID:N:P`, `x:ID:N:P` (an open tab, a recently closed one, one of a
/// closed window), `g:ID:N:NAME` (a tab group), `a:ID:I` (an archived tab).
fn resolve(app: &App, value: &str) -> Result<Pick> {
    let bad = || anyhow!("not a pick: {value:?}");
    let mut parts = value.splitn(4, ':');
    let kind = parts.next().ok_or_else(bad)?;
    let id: i64 = parts.next().and_then(|s| s.parse().ok()).ok_or_else(bad)?;
    let n: usize = parts.next().and_then(|s| s.parse().ok()).ok_or_else(bad)?;
    let rest = parts.next();
    let store = app.store()?;
    if kind == "a" {
        let tabs = store.archived_in(SnapshotId(id))?;
        let t = tabs.get(n).ok_or_else(bad)?;
        return Ok(Pick {
            value: value.to_owned(),
            snapshot: id,
            window: None,
            label: format!("archived tab of snapshot #{id}"),
            tabs: vec![(t.title.clone(), t.url.clone())],
        });
    }
    let data = SessionData::from_bytes(format!("snapshot {id}"), store.read_json(SnapshotId(id))?)?;
    let session = data.parse()?;
    let records = session.tab_records(TabFilter {
        window: None,
        include_closed: true,
    });
    let position: Option<usize> = rest.and_then(|r| r.parse().ok());
    let (state, label) = match kind {
        "w" => (TabState::Open, format!("window {n} of snapshot #{id}")),
        "t" => (TabState::Open, format!("tab of snapshot #{id}")),
        "c" => (TabState::Closed, format!("closed tab of snapshot #{id}")),
        "x" => (
            TabState::ClosedWindow,
            format!("tab of closed window {n}, snapshot #{id}"),
        ),
        "g" => (
            TabState::Open,
            format!("group {:?} of snapshot #{id}", rest.unwrap_or("")),
        ),
        _ => return Err(bad()),
    };
    let tabs: Vec<(String, String)> = records
        .filter(|r| r.state == state && r.window == n)
        .filter(|r| match kind {
            "w" => true,
            "g" => r.group == rest,
            _ => Some(r.position) == position,
        })
        .map(|r| {
            (
                r.title.unwrap_or("").to_owned(),
                r.url.unwrap_or("").to_owned(),
            )
        })
        .collect();
    if tabs.is_empty() {
        return Err(bad());
    }
    Ok(Pick {
        value: value.to_owned(),
        snapshot: id,
        window: (kind == "w").then_some(n),
        label,
        tabs,
    })
}

pub async fn add(
    State(app): State<Arc<App>>,
    Form(form): Form<Vec<(String, String)>>,
) -> Result<Redirect, WebError> {
    blocking(move || {
        let mut new = Vec::new();
        for (k, v) in &form {
            if k == "pick" {
                new.push(resolve(&app, v)?);
            }
        }
        let mut picks = app.picks.lock().map_err(|e| anyhow!("{e}"))?;
        for p in new {
            if !picks.iter().any(|q| q.value == p.value) {
                picks.push(p);
            }
        }
        Ok(Redirect::to(&app.url("/picks")))
    })
    .await
}

pub async fn clear(State(app): State<Arc<App>>) -> Result<Redirect, WebError> {
    app.picks.lock().map_err(|e| anyhow!("{e}"))?.clear();
    Ok(Redirect::to(&app.url("/picks")))
}

fn picks(app: &App) -> Result<Vec<Pick>> {
    Ok(app.picks.lock().map_err(|e| anyhow!("{e}"))?.clone())
}

pub async fn basket(State(app): State<Arc<App>>) -> Result<Markup, WebError> {
    let picks = picks(&app)?;
    let body = html! {
        @if picks.is_empty() {
            p { "Nothing picked yet: check tabs, windows or groups in a snapshot, then "
                em { "Pick the checked" } "." }
        } @else {
            @for p in &picks {
                section.window {
                    h2 { (p.label) " (" (p.tabs.len()) " tabs)" }
                    ul { @for (t, u) in &p.tabs { li { (title_url(Some(t), Some(u))) } } }
                }
            }
            p.actions {
                a.button href=(app.url("/plan?action=open")) { "Open now…" }
                " "
                a.button href=(app.url("/plan?action=add")) { "Add at next start…" }
            }
            form method="post" action=(app.url("/picks/clear")) {
                (csrf(&app)) button type="submit" { "Clear the picks" }
            }
        }
    };
    Ok(page(&app, "Picked", body))
}

/// Which program a step runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Program {
    Ffsession,
    Browser,
}

/// How a step is previewed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Preview {
    /// Run as it is: it writes only into the page's own folder.
    Run,
    /// Run with `--dry-run`.
    DryRun,
    /// Only shown.
    Show,
}

struct Step {
    program: Program,
    args: Vec<OsString>,
    preview: Preview,
}

struct Plan {
    title: String,
    what: Vec<String>,
    steps: Vec<Step>,
}

#[derive(serde::Deserialize)]
pub struct PlanQuery {
    action: String,
    #[serde(default)]
    snapshot: Option<i64>,
}

fn ff(args: &[&dyn AsRef<std::ffi::OsStr>], preview: Preview) -> Step {
    Step {
        program: Program::Ffsession,
        args: args.iter().map(|a| a.as_ref().to_owned()).collect(),
        preview,
    }
}

/// The plan of `action`.
fn make_plan(app: &App, action: &str, snapshot: Option<i64>) -> Result<Plan> {
    let work = &app.work_dir;
    let need_snapshot = || snapshot.ok_or_else(|| anyhow!("no snapshot named"));
    Ok(match action {
        "restore" => {
            let id = need_snapshot()?.to_string();
            Plan {
                title: format!("Restore snapshot #{id}"),
                what: vec![format!("The browser reopens snapshot #{id} at its next start. The profile's current session is backed up first (the undo point); refused while the browser runs.")],
                steps: vec![ff(&[&"restore", &id], Preview::DryRun)],
            }
        }
        "rescue" => {
            let id = need_snapshot()?.to_string();
            let out = work.join(format!("rescued-{id}.jsonlz4"));
            Plan {
                title: format!("Rescue snapshot #{id}"),
                what: vec![format!("Every complete tab of the damaged snapshot #{id} is recovered into a session file, which the browser then reopens at its next start (with an undo point; refused while the browser runs).")],
                steps: vec![
                    ff(&[&"rescue", &id, &"-o", &out], Preview::Run),
                    ff(&[&"restore", &out], Preview::DryRun),
                ],
            }
        }
        "add" => {
            let picks = picks(app)?;
            let mut what = Vec::new();
            let mut by_snapshot: Vec<(i64, Vec<usize>)> = Vec::new();
            for p in &picks {
                match p.window {
                    Some(n) => match by_snapshot.iter_mut().find(|(s, _)| *s == p.snapshot) {
                        Some((_, ws)) => ws.push(n),
                        None => by_snapshot.push((p.snapshot, vec![n])),
                    },
                    None => what.push(format!("left out: {} (only whole windows are added at the next start; open tabs and groups now, or pick their window)", p.label)),
                }
            }
            if by_snapshot.is_empty() {
                return Err(anyhow!("no whole window picked: pick a window's box in a snapshot to add it at the next start"));
            }
            let mut steps = Vec::new();
            let mut files: Vec<OsString> = Vec::new();
            for (id, windows) in &by_snapshot {
                let out = work.join(format!("picked-{id}.jsonlz4"));
                let mut args: Vec<OsString> = vec!["extract".into(), id.to_string().into()];
                for w in windows {
                    args.push("--window".into());
                    args.push(w.to_string().into());
                }
                args.push("-o".into());
                args.push(out.clone().into());
                steps.push(Step {
                    program: Program::Ffsession,
                    args,
                    preview: Preview::Run,
                });
                what.push(format!(
                    "window {} of snapshot #{id}",
                    windows
                        .iter()
                        .map(usize::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
                files.push(out.into());
            }
            let merged = work.join("merged.jsonlz4");
            let mut args: Vec<OsString> = vec!["merge".into(), "current".into()];
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
            what.insert(0, "The picked windows are merged into the profile's current session (tabs it has already left out), which the browser opens at its next start. The current session is backed up first (the undo point); refused while the browser runs.".to_owned());
            Plan {
                title: "Add at next start".to_owned(),
                what,
                steps,
            }
        }
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
                    .filter(|u| {
                        let ok = safe_href(u).is_some();
                        if !ok {
                            what.push(format!("left out (not a web address): {u}"));
                        }
                        ok
                    })
                    .collect();
                if urls.is_empty() {
                    continue;
                }
                if p.window.is_some() {
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

/// The command line of `step`, as a user would type it.
fn line(app: &App, step: &Step, dry: bool) -> String {
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
    shell_line(words)
}

/// What a step printed.
struct Ran {
    line: String,
    ok: bool,
    out: String,
}

fn run(app: &App, step: &Step, dry: bool) -> Ran {
    let line = line(app, step, dry);
    let mut cmd = match step.program {
        Program::Ffsession => {
            let mut c = std::process::Command::new(&app.exe);
            c.args(&app.globals);
            c
        }
        Program::Browser => std::process::Command::new(&app.browser_bin),
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

fn ran(r: &Ran) -> Markup {
    html! {
        div.ran {
            code { "$ " (r.line) }
            pre class=(if r.ok { "ok" } else { "failed" }) { (r.out) }
        }
    }
}

pub async fn plan(
    State(app): State<Arc<App>>,
    Query(q): Query<PlanQuery>,
) -> Result<Markup, WebError> {
    blocking(move || {
        let plan = make_plan(&app, &q.action, q.snapshot)?;
        // The preview: the steps that only write into the page's folder
        // run, the restore runs with --dry-run; the first failure stops it.
        let mut previews = Vec::new();
        for step in &plan.steps {
            let r = match step.preview {
                Preview::Show => continue,
                Preview::Run => run(&app, step, false),
                Preview::DryRun => run(&app, step, true),
            };
            let ok = r.ok;
            previews.push(r);
            if !ok {
                break;
            }
        }
        let blocked = previews.iter().any(|r| !r.ok);
        let body = html! {
            @for w in &plan.what { p { (w) } }
            h2 { "The command lines that do the same" }
            pre.lines { @for s in &plan.steps { (line(&app, s, false)) "\n" } }
            @if !previews.is_empty() {
                h2 { "What they say they will do" }
                @for r in &previews { (ran(r)) }
            }
            @if blocked {
                p.alarm { "A step fails: nothing would be done." }
            } @else {
                form method="post" action=(app.url("/do")) {
                    (csrf(&app))
                    input type="hidden" name="action" value=(q.action);
                    @if let Some(id) = q.snapshot { input type="hidden" name="snapshot" value=(id); }
                    button.go type="submit" { "Do it" }
                }
            }
        };
        Ok(page(&app, &plan.title, body))
    })
    .await
}

#[derive(serde::Deserialize)]
pub struct ActForm {
    action: String,
    #[serde(default)]
    snapshot: Option<i64>,
}

pub async fn act(State(app): State<Arc<App>>, Form(f): Form<ActForm>) -> Result<Markup, WebError> {
    blocking(move || {
        let plan = make_plan(&app, &f.action, f.snapshot)?;
        let mut done = Vec::new();
        for step in &plan.steps {
            let r = run(&app, step, false);
            let ok = r.ok;
            done.push(r);
            if !ok {
                break;
            }
        }
        let failed = done.iter().any(|r| !r.ok);
        let body = html! {
            @for r in &done { (ran(r)) }
            p class=(if failed { "alarm" } else { "ok" }) {
                @if failed { "A step failed; the steps after it did not run." } @else { "Done." }
            }
        };
        Ok(page(&app, &plan.title, body))
    })
    .await
}
