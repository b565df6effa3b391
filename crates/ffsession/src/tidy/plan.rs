//! Planning a tidy: which tabs go and why, which are rewritten, and the
//! size of the result (rendered to a byte counter, not to memory).

use std::collections::HashMap;

use super::raw::{self, Counting, RenderOptions, TabEdit};
use super::{ClosedTabPlan, Editable, Reason, TidyError, TidyPlan, TidyRules, WindowPlan};
use crate::session::Tab;

fn is_protected(rules: &TidyRules, w: &raw::RawWindow<'_>, i: usize, tab: &Tab<'_>) -> bool {
    let selected = w.selected.unwrap_or(1).clamp(1, w.tabs.len().max(1) as u64) as usize - 1;
    (tab.pinned && !rules.include_pinned)
        || (i == selected && !rules.include_selected)
        || (!rules.include_grouped
            && tab.group_id.as_deref().is_some_and(|id| {
                w.groups.iter().any(|g| {
                    g.id.as_deref() == Some(id) && g.name.as_deref().is_some_and(|n| !n.is_empty())
                })
            }))
}

/// Plan a tidy of `session` with `rules` at `now_ms`. Fails with
/// [`TidyError::WouldRemoveAll`] if every tab would go and `allow_empty` is false.
pub fn plan(
    session: &Editable<'_>,
    rules: &TidyRules,
    now_ms: u64,
    allow_empty: bool,
) -> Result<TidyPlan, TidyError> {
    let doc = &session.doc;
    let mut reasons: Vec<Vec<Option<Reason>>> = doc
        .windows
        .iter()
        .map(|w| vec![None; w.tabs.len()])
        .collect();
    if let Some(age) = rules.archive_older_than_ms {
        let cut = now_ms.saturating_sub(age);
        for (wi, w) in doc.windows.iter().enumerate() {
            for (i, f) in w.facts.iter().enumerate() {
                let Some(tab) = f else { continue };
                if let Some(last) = tab.last_accessed.filter(|l| *l < cut) {
                    if !is_protected(rules, w, i, tab) {
                        reasons[wi][i] = Some(Reason::Old {
                            last_accessed: last,
                        });
                    }
                }
            }
        }
    }
    if rules.close_duplicates {
        // The most recently used tab of each URL, among those still open.
        let mut best: HashMap<&str, (u64, usize, usize)> = HashMap::new();
        for (wi, w) in doc.windows.iter().enumerate() {
            for (i, f) in w.facts.iter().enumerate() {
                let (Some(tab), None) = (f, &reasons[wi][i]) else {
                    continue;
                };
                let Some(url) = tab.url() else { continue };
                let used = tab.last_accessed.unwrap_or(0);
                match best.get(url) {
                    Some((b, _, _)) if *b >= used => {}
                    _ => {
                        best.insert(url, (used, wi, i));
                    }
                }
            }
        }
        for (wi, w) in doc.windows.iter().enumerate() {
            for (i, f) in w.facts.iter().enumerate() {
                let (Some(tab), None) = (f, &reasons[wi][i]) else {
                    continue;
                };
                let Some(url) = tab.url() else { continue };
                let Some(&(_, bw, bi)) = best.get(url) else {
                    continue;
                };
                if (bw, bi) != (wi, i) && !is_protected(rules, w, i, tab) {
                    reasons[wi][i] = Some(Reason::Duplicate {
                        of_window: bw + 1,
                        of_position: bi + 1,
                    });
                }
            }
        }
    }
    let mut edits = Vec::with_capacity(doc.windows.len());
    let mut closed = Vec::new();
    for (wi, w) in doc.windows.iter().enumerate() {
        let mut we = Vec::with_capacity(w.tabs.len());
        for (i, reason) in reasons[wi].iter_mut().enumerate() {
            if let Some(reason) = reason.take() {
                let tab = w.facts[i].as_ref();
                closed.push(ClosedTabPlan {
                    window: wi + 1,
                    position: i + 1,
                    url: tab.and_then(Tab::url).unwrap_or_default().to_owned(),
                    title: tab.and_then(Tab::title).unwrap_or_default().to_owned(),
                    last_accessed: tab.and_then(|t| t.last_accessed),
                    reason,
                });
                we.push(TabEdit::Remove);
                continue;
            }
            let needs_rewrite = w.facts[i].as_ref().is_some_and(|tab| {
                rules
                    .trim_history
                    .is_some_and(|n| raw::trimmed_range(tab.entries.len(), tab.index, n).is_some())
                    || rules.drop_payload
            });
            if needs_rewrite {
                we.push(TabEdit::Rewrite {
                    trim: rules.trim_history,
                    drop_payload: rules.drop_payload,
                });
            } else {
                we.push(TabEdit::Keep);
            }
        }
        edits.push(we);
    }
    let tabs_before = session.tabs();
    let tabs_after = tabs_before - closed.len();
    if tabs_after == 0 && tabs_before > 0 && !allow_empty {
        return Err(TidyError::WouldRemoveAll {
            path: session.path.to_path_buf(),
            tabs: tabs_before,
        });
    }
    let (closed_tabs_dropped, closed_windows_dropped) = if rules.drop_closed {
        closed_counts(session)
    } else {
        (0, 0)
    };
    let mut plan = TidyPlan {
        source: session.path.to_path_buf(),
        windows: Vec::new(),
        closed,
        closed_tabs_dropped,
        closed_windows_dropped,
        bytes_before: session.json_len,
        bytes_after: 0,
        tabs_before,
        tabs_after,
        edits,
        drop_closed: rules.drop_closed,
    };
    let mut counter = Counting {
        inner: std::io::sink(),
        count: 0,
    };
    let sizes =
        render_plan(&mut counter, session, &plan, None).map_err(|e| TidyError::NotEditable {
            path: session.path.to_path_buf(),
            reason: e.to_string(),
        })?;
    plan.bytes_after = counter.count;
    plan.windows = doc
        .windows
        .iter()
        .enumerate()
        .map(|(wi, w)| WindowPlan {
            window: wi + 1,
            tabs_before: w.tabs.len(),
            tabs_after: plan.edits[wi]
                .iter()
                .filter(|e| **e != TabEdit::Remove)
                .count(),
            bytes_before: w_raw_len(session, wi),
            bytes_after: sizes[wi].0,
            tabs_rewritten: sizes[wi].1,
        })
        .collect();
    Ok(plan)
}

fn w_raw_len(session: &Editable<'_>, wi: usize) -> u64 {
    session.doc.windows[wi].len
}

fn closed_counts(session: &Editable<'_>) -> (u64, u64) {
    let len = |v: Option<&serde_json::value::RawValue>| {
        v.and_then(|v| serde_json::from_str::<Vec<&serde_json::value::RawValue>>(v.get()).ok())
            .map_or(0, |l| l.len() as u64)
    };
    let tabs = session
        .doc
        .windows
        .iter()
        .map(|w| len(w.obj.get("_closedTabs")))
        .sum();
    (tabs, len(session.doc.top.get("_closedWindows")))
}

fn render_plan<W: std::io::Write>(
    out: &mut Counting<W>,
    session: &Editable<'_>,
    plan: &TidyPlan,
    last_update: Option<u64>,
) -> std::io::Result<Vec<(u64, usize)>> {
    let windows: Vec<_> = session
        .doc
        .windows
        .iter()
        .zip(&plan.edits)
        .map(|(w, e)| (w, e.as_slice()))
        .collect();
    raw::render(
        out,
        &session.doc.top,
        &windows,
        RenderOptions {
            drop_closed_tabs: plan.drop_closed,
            drop_closed_windows: plan.drop_closed,
            selected_window: session.doc.selected_window(),
            last_update,
        },
    )
}

/// The tidied session JSON, with `session.lastUpdate` set to
/// `last_update` when given (the time of the tidy: the tidied session is
/// newer than the one it came from).
pub fn render_json(session: &Editable<'_>, plan: &TidyPlan, last_update: Option<u64>) -> Vec<u8> {
    let mut out = Counting {
        inner: Vec::with_capacity(usize::try_from(plan.bytes_after).unwrap_or(0)),
        count: 0,
    };
    // Writing to a Vec cannot fail.
    let _ = render_plan(&mut out, session, plan, last_update);
    out.inner
}

/// What one rule alone would save, for a tidy without rules.
#[derive(Debug, Clone)]
pub struct RuleSaving {
    /// The rule alone, with its value assumed (the front end words it).
    pub rule: TidyRules,
    /// Tabs it would close.
    pub tabs_closed: usize,
    /// Session JSON bytes it would save.
    pub bytes_saved: u64,
}

/// What each rule alone would save, with 30 days (archive) and 5 entries
/// (trim history) as the values assumed.
pub fn rule_savings(session: &Editable<'_>, now_ms: u64) -> Result<Vec<RuleSaving>, TidyError> {
    TidyRules::each_alone()
        .into_iter()
        .map(|rules| {
            let p = plan(session, &rules, now_ms, true)?;
            Ok(RuleSaving {
                rule: rules,
                tabs_closed: p.closed.len(),
                bytes_saved: if p.is_noop() {
                    0
                } else {
                    p.bytes_before.saturating_sub(p.bytes_after)
                },
            })
        })
        .collect()
}
