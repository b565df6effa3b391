//! Picking tabs, windows and groups across snapshots, and bringing them
//! back: every action is first a plan (what will happen, the command lines
//! that do the same, and what `ffsession restore --dry-run` says), then runs exactly those
//! command lines: `ffsession extract`, `merge`, `rescue`, `restore` (undo
//! point, refused while the browser runs), or the browser's own remote
//! command (`firefox --profile DIR --new-tab URL`).

use std::sync::Arc;

use anyhow::{anyhow, Result};
use axum::extract::{Query, State};
use axum::response::Redirect;
use axum::Form;
use ffsession::session::{TabFilter, TabState};
use ffsession::store::SnapshotId;
use ffsession::SessionData;
use maud::{html, Markup};

use super::actions::{line, make_plan, ran, run, Plan, Preview};
use super::layout::{csrf, page, title_url};
use super::{blocking, App, WebError};
use crate::fmt::{count, escape};

/// Something picked.
#[derive(Debug, Clone)]
pub struct Pick {
    /// The form value that named it.
    pub value: String,
    /// The snapshot it is in.
    pub snapshot: i64,
    /// What `extract` takes of it for "add at next start".
    pub take: Take,
    /// What it is, for people.
    pub label: String,
    /// Its tabs: title and URL.
    pub tabs: Vec<(String, String)>,
}

/// What `extract` takes of a pick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Take {
    /// `ffsession extract --window N`.
    Window(usize),
    /// `ffsession extract --tab W:P` for each position.
    Tabs(usize, Vec<usize>),
    /// `--closed-tab W:P`.
    Closed(usize, usize),
    /// `--closed-window N`.
    ClosedWindow(usize),
    /// `--closed-window-tab N:P`.
    ClosedWindowTab(usize, usize),
    /// `--archived-tab N` (1-based).
    Archived(usize),
}

impl Take {
    /// A whole window: opened now in a window of its own.
    pub fn is_window(&self) -> bool {
        matches!(self, Take::Window(_) | Take::ClosedWindow(_))
    }

    /// The `extract` options that name it.
    pub fn options(&self) -> Vec<(&'static str, String)> {
        match self {
            Take::Window(n) => vec![("--window", n.to_string())],
            Take::Tabs(n, positions) => positions
                .iter()
                .map(|p| ("--tab", format!("{n}:{p}")))
                .collect(),
            Take::Closed(n, p) => vec![("--closed-tab", format!("{n}:{p}"))],
            Take::ClosedWindow(n) => vec![("--closed-window", n.to_string())],
            Take::ClosedWindowTab(n, p) => vec![("--closed-window-tab", format!("{n}:{p}"))],
            Take::Archived(n) => vec![("--archived-tab", n.to_string())],
        }
    }
}

/// The pick a form value names: `w:ID:N` (an open window), `k:ID:N` (a
/// closed window), `t:ID:N:P`, `c:ID:N:P`, `x:ID:N:P` (an open tab, a
/// recently closed one, one of a closed window), `g:ID:N:NAME` (a tab
/// group), `a:ID:I` (an archived tab, from 0).
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
            take: Take::Archived(n + 1),
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
        "k" => (
            TabState::ClosedWindow,
            format!("closed window {n} of snapshot #{id}"),
        ),
        "g" => (
            TabState::Open,
            format!("group \"{}\" of snapshot #{id}", escape(rest.unwrap_or(""))),
        ),
        _ => return Err(bad()),
    };
    let mut positions = Vec::new();
    let tabs: Vec<(String, String)> = records
        .filter(|r| r.state == state && r.window == n)
        .filter(|r| match kind {
            "w" | "k" => true,
            "g" => r.group == rest,
            _ => Some(r.position) == position,
        })
        .map(|r| {
            positions.push(r.position);
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
        take: match (kind, position) {
            ("w", _) => Take::Window(n),
            ("k", _) => Take::ClosedWindow(n),
            ("t" | "g", _) => Take::Tabs(n, positions),
            ("c", Some(p)) => Take::Closed(n, p),
            ("x", Some(p)) => Take::ClosedWindowTab(n, p),
            _ => return Err(bad()),
        },
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

pub fn picks(app: &App) -> Result<Vec<Pick>> {
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
                    h2 { (p.label) " (" (count(p.tabs.len(), "tab", "tabs")) ")" }
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

#[derive(serde::Deserialize)]
pub struct PlanQuery {
    action: String,
    #[serde(default)]
    snapshot: Option<i64>,
}

pub async fn plan(
    State(app): State<Arc<App>>,
    Query(q): Query<PlanQuery>,
) -> Result<Markup, WebError> {
    blocking(move || {
        let plan = make_plan(&app, &q.action, q.snapshot)?;
        show_plan(&app, &q.action, q.snapshot, &plan, None)
    })
    .await
}

/// The plan's page: what will happen, the command lines, what they say
/// they would do (the steps that write only into the page's folder run,
/// the restore as a dry run; the first failure stops it), and *Do it*,
/// which carries the plan's digest.
fn show_plan(
    app: &App,
    action: &str,
    snapshot: Option<i64>,
    plan: &Plan,
    note: Option<&str>,
) -> Result<Markup, WebError> {
    let previews = {
        let _running = app.running.lock().map_err(|e| anyhow!("{e}"))?;
        let mut previews = Vec::new();
        for step in &plan.steps {
            let r = match step.preview {
                Preview::Show => continue,
                Preview::Run => run(app, step, false),
                Preview::DryRun => run(app, step, true),
            };
            let ok = r.ok;
            previews.push(r);
            if !ok {
                break;
            }
        }
        previews
    };
    let blocked = previews.iter().any(|r| !r.ok);
    let body = html! {
        @if let Some(note) = note { p.alarm { (note) } }
        @for w in &plan.what { p { (w) } }
        h2 { "The command lines that do the same" }
        pre.lines { @for s in &plan.steps { (line(app, s, false)) "\n" } }
        @if !previews.is_empty() {
            h2 { "What they say they will do" }
            @for r in &previews { (ran(r)) }
        }
        @if blocked {
            p.alarm { "A step fails: nothing would be done." }
        } @else {
            form method="post" action=(app.url("/do")) {
                (csrf(app))
                input type="hidden" name="action" value=(action);
                @if let Some(id) = snapshot { input type="hidden" name="snapshot" value=(id); }
                input type="hidden" name="plan" value=(plan.digest());
                button.go type="submit" { "Do it" }
            }
        }
    };
    Ok(page(app, &plan.title, body))
}

#[derive(serde::Deserialize)]
pub struct ActForm {
    action: String,
    #[serde(default)]
    snapshot: Option<i64>,
    /// The digest of the plan the page showed.
    #[serde(default)]
    plan: Option<String>,
}

pub async fn act(State(app): State<Arc<App>>, Form(f): Form<ActForm>) -> Result<Markup, WebError> {
    blocking(move || {
        let plan = make_plan(&app, &f.action, f.snapshot)?;
        // Only the plan shown runs: when the picks changed since (in
        // another tab, say), the new plan is shown instead, to confirm.
        if f.plan.as_deref() != Some(plan.digest().as_str()) {
            return show_plan(
                &app,
                &f.action,
                f.snapshot,
                &plan,
                Some("The plan changed since it was shown (the picks changed): nothing was done. This is the plan now; Do it runs this one."),
            );
        }
        let done = {
            let _running = app.running.lock().map_err(|e| anyhow!("{e}"))?;
            let mut done = Vec::new();
            for step in &plan.steps {
                let r = run(&app, step, false);
                let ok = r.ok;
                done.push(r);
                if !ok {
                    break;
                }
            }
            done
        };
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
