"""Compare ffsession's output with Firefox's own answer (a Firefox.snapshot())."""

from __future__ import annotations

import os
import time
from collections import Counter

from .cli import CheckFailed

TAB_KEYS = {
    "window": int, "position": int, "url": str, "title": (str, type(None)), "pinned": bool,
    "hidden": bool, "group": (str, type(None)), "container": int,
    "last_accessed": (int, type(None)), "history_len": int, "state": str,
}
INFO_KEYS = ["file", "format", "windows", "tabs", "closed_tabs", "closed_windows",
             "last_update", "start_time", "recent_crashes", "selected_window"]


def _r(v, n=300):
    s = repr(v)
    return s if len(s) <= n else s[:n] + "...(%d chars)" % len(s)


def short_diff(actual, expected):
    """'expected X, got Y', shortened to the first difference for big values."""
    full = "expected %r, got %r" % (expected, actual)
    if len(full) <= 600:
        return full
    if isinstance(actual, list) and isinstance(expected, list):
        for i, (a, e) in enumerate(zip(actual, expected)):
            if a != e:
                return "lists differ first at item %d (expected %d items, got %d): %s" % (
                    i, len(expected), len(actual), short_diff(a, e))
        return "list lengths differ: expected %d items, got %d (extra: %s)" % (
            len(expected), len(actual), _r(actual[len(expected):] or expected[len(actual):]))
    if isinstance(actual, dict) and isinstance(expected, dict):
        keys = sorted(set(actual) | set(expected), key=str)
        diffs = ["%s: expected %s, got %s" % (k, _r(expected.get(k, "<missing>"), 120), _r(actual.get(k, "<missing>"), 120))
                 for k in keys if actual.get(k, "<missing>") != expected.get(k, "<missing>")]
        return "objects differ in " + "; ".join(diffs[:6])
    return "expected %s, got %s" % (_r(expected), _r(actual))


class Soft:
    """Collects failed expectations so one run reports every discrepancy."""

    def __init__(self):
        self.errors = []

    def eq(self, what, actual, expected, cmd=None):
        if actual != expected:
            self.errors.append("%s: %s%s"
                               % (what, short_diff(actual, expected), ("\n    command: " + cmd) if cmd else ""))
            return False
        return True

    def true(self, what, cond, detail="", cmd=None):
        if not cond:
            self.errors.append("%s%s%s" % (what, (": " + detail) if detail else "",
                                           ("\n    command: " + cmd) if cmd else ""))
        return bool(cond)

    def raise_if_any(self, header=""):
        if self.errors:
            body = "\n".join("- " + e for e in self.errors[:40])
            more = "" if len(self.errors) <= 40 else "\n- ... %d more" % (len(self.errors) - 40)
            raise CheckFailed((header + "\n" if header else "") + body + more)


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def ff_tab_url(t):
    """URL of the entry at the tab's index: the live one, or for a tab that has
    not been restored yet (lazy/pending) the one SessionStore will load."""
    if t.get("pending") or not t.get("url") or t["url"] == "about:blank":
        return t.get("ss_url") or t.get("url")
    return t["url"]


def ff_tab_title(t):
    if t.get("pending"):
        return t.get("ss_title")
    return t.get("title") or t.get("ss_title")


def ff_tab_tuple(t, history=True):
    tup = (ff_tab_url(t), ff_tab_title(t), bool(t["pinned"]), bool(t["hidden"]), int(t["container"]),
           t.get("group"))
    if history:
        tup += (t.get("ss_entries"),)
    return tup


def ff_tab_dict(t):
    return {"url": ff_tab_url(t), "title": ff_tab_title(t), "pinned": bool(t["pinned"]),
            "hidden": bool(t["hidden"]), "container": int(t["container"]),
            "group": t.get("group"), "history_len": t.get("ss_entries")}


def cli_tab_tuple(t, history=True):
    tup = (t.get("url"), t.get("title"), t.get("pinned"), t.get("hidden"), t.get("container"),
           t.get("group"))
    if history:
        tup += (t.get("history_len"),)
    return tup


def expected_from_snapshot(snap):
    """Firefox's answer in ffsession's terms (also written next to fixtures)."""
    wins = [[ff_tab_dict(t) for t in w["tabs"]] for w in snap["windows"]]
    return {
        "windows": len(wins),
        "tabs": sum(len(w) for w in wins),
        "closed_tabs": sum(w["closed_tabs"] for w in snap["windows"]),
        "closed_windows": snap["closed_window_count"],
        "start_time": (snap.get("session") or {}).get("startTime"),
        "recent_crashes": (snap.get("session") or {}).get("recentCrashes"),
        "open_windows": wins,
        "closed_tab_urls_by_window": [w["closed_tab_urls"] for w in snap["windows"]],
        "closed_window_tab_urls": [cw["tabs"] for cw in snap["closed_windows"]],
        "note": "Windows may be listed in a different order by ffsession (file order) "
                "than by Firefox: compare as a multiset of per-window tab lists.",
    }


def check_info(soft, info, r, path, snap, since_ms=None):
    exp = expected_from_snapshot(snap)
    for k in INFO_KEYS:
        soft.true("info --json has key %r" % k, k in info, "keys: %s" % sorted(info), r.cmd)
    soft.true("info.file names the file", str(info.get("file", "")).endswith(os.path.basename(path)),
              repr(info.get("file")), r.cmd)
    soft.eq("info.format", info.get("format"), "mozlz4", r.cmd)
    soft.eq("info.windows", info.get("windows"), exp["windows"], r.cmd)
    soft.eq("info.tabs", info.get("tabs"), exp["tabs"], r.cmd)
    soft.eq("info.closed_tabs", info.get("closed_tabs"), exp["closed_tabs"], r.cmd)
    soft.eq("info.closed_windows", info.get("closed_windows"), exp["closed_windows"], r.cmd)
    if exp["start_time"] is not None:
        soft.eq("info.start_time", info.get("start_time"), exp["start_time"], r.cmd)
    if exp["recent_crashes"] is not None:
        soft.eq("info.recent_crashes", info.get("recent_crashes"), exp["recent_crashes"], r.cmd)
    lu = info.get("last_update")
    now = int(time.time() * 1000)
    lo = since_ms if since_ms is not None else now - 24 * 3600 * 1000
    soft.true("info.last_update is ms epoch within this test run",
              _is_int(lu) and lo - 5000 <= lu <= now + 60000,
              "got %r, expected %d..%d" % (lu, lo, now), r.cmd)
    sw = info.get("selected_window")
    soft.true("info.selected_window is 1..windows", _is_int(sw) and 1 <= sw <= max(1, exp["windows"]),
              repr(sw), r.cmd)


def _group_windows(items):
    by = {}
    for t in items:
        by.setdefault(t.get("window"), []).append(t)
    for w in by.values():
        w.sort(key=lambda t: t.get("position") if _is_int(t.get("position")) else 0)
    return by


def check_tab_items(soft, items, r, states=("open",)):
    for i, t in enumerate(items):
        if not isinstance(t, dict):
            soft.true("tabs item %d is an object" % i, False, repr(t)[:200], r.cmd)
            continue
        for k, typ in TAB_KEYS.items():
            if k not in t:
                soft.true("tabs item %d has key %r" % (i, k), False, "keys: %s" % sorted(t), r.cmd)
            elif not isinstance(t[k], typ) or (typ is int and isinstance(t[k], bool)):
                soft.true("tabs item %d key %r has type %s" % (i, k, typ), False, repr(t[k])[:200], r.cmd)
        soft.true("tabs item %d state in %s" % (i, states), t.get("state") in states,
                  repr(t.get("state")), r.cmd)
        if len(soft.errors) > 30:
            return


def check_open_tabs(soft, items, r, snap, history=True):
    """items: ffsession's open tabs. Returns {ffsession window number: firefox window index}."""
    check_tab_items(soft, items, r)
    by = _group_windows(items)
    exp_wins = [[ff_tab_tuple(t, history) for t in w["tabs"]] for w in snap["windows"]]
    soft.eq("number of windows in `tabs` output", len(by), len(exp_wins), r.cmd)
    soft.eq("number of open tabs in `tabs` output", len(items), sum(len(w) for w in exp_wins), r.cmd)
    for wn, tabs in sorted(by.items(), key=lambda kv: str(kv[0])):
        pos = [t.get("position") for t in tabs]
        soft.eq("window %s positions" % wn, pos, list(range(1, len(tabs) + 1)), r.cmd)
    if by:
        soft.eq("window numbers", sorted(by, key=str), list(range(1, len(by) + 1)), r.cmd)
    # Multiset compare of windows (Firefox may order windows differently).
    got = {wn: [cli_tab_tuple(t, history) for t in tabs] for wn, tabs in by.items()}
    mapping, unmatched_ff = {}, list(range(len(exp_wins)))
    for wn, tl in got.items():
        for fi in unmatched_ff:
            if exp_wins[fi] == tl:
                mapping[wn] = fi
                unmatched_ff.remove(fi)
                break
    for wn, tl in got.items():
        if wn in mapping:
            continue
        # best overlap, for a readable diff
        best, score = None, -1
        for fi in unmatched_ff:
            sc = len(set(u[0] for u in tl) & set(u[0] for u in exp_wins[fi]))
            if sc > score:
                best, score = fi, sc
        if best is None:
            soft.true("ffsession window %s matches a Firefox window" % wn, False,
                      "no Firefox window left; tabs: %r" % tl[:5], r.cmd)
            continue
        unmatched_ff.remove(best)
        mapping[wn] = best
        exp = exp_wins[best]
        diffs = []
        if len(exp) != len(tl):
            diffs.append("tab count %d, Firefox has %d" % (len(tl), len(exp)))
        for i, (a, b) in enumerate(zip(tl, exp)):
            if a != b:
                diffs.append("position %d: got %r, Firefox %r" % (i + 1, a, b))
            if len(diffs) > 5:
                break
        soft.true("ffsession window %s == Firefox window %d (url, title, pinned, hidden, container, group%s)"
                  % (wn, best, ", history_len" if history else ""), False, "; ".join(diffs), r.cmd)
    for fi in unmatched_ff:
        soft.true("Firefox window %d present in ffsession output" % fi, False,
                  "first tabs %r" % exp_wins[fi][:3], r.cmd)
    return mapping


def check_closed_tabs(soft, items, r, snap, mapping):
    """items: full `tabs --closed` output."""
    check_tab_items(soft, items, r, states=("open", "closed", "closed-window"))
    closed = [t for t in items if t.get("state") == "closed"]
    cwin = [t for t in items if t.get("state") == "closed-window"]
    exp_closed = sum(w["closed_tabs"] for w in snap["windows"])
    soft.eq("number of state=closed items", len(closed), exp_closed, r.cmd)
    by = {}
    for t in closed:
        by.setdefault(t.get("window"), []).append(t.get("url"))
    for wn, urls in by.items():
        fi = mapping.get(wn)
        if fi is None:
            soft.true("closed tabs of window %s belong to an open window" % wn, False, repr(urls), r.cmd)
            continue
        soft.eq("closed tab URLs of window %s (as a set)" % wn, sorted(urls),
                sorted(snap["windows"][fi]["closed_tab_urls"]), r.cmd)
    exp_cw = Counter(u for cw in snap["closed_windows"] for u in cw["tabs"])
    soft.eq("URLs of state=closed-window items (as a multiset)", sorted(Counter(t.get("url") for t in cwin).elements()),
            sorted(exp_cw.elements()), r.cmd)


def check_session_file(cli, path, snap, since_ms=None, closed=True, history=True, header=""):
    """Run info/tabs(/tabs --closed) on path and compare with Firefox's snapshot."""
    soft = Soft()
    info, r = cli.info(path)
    check_info(soft, info, r, path, snap, since_ms)
    items, r2 = cli.tabs(path)
    mapping = check_open_tabs(soft, items, r2, snap, history)
    if closed:
        allitems, r3 = cli.tabs(path, closed=True)
        open_part = [t for t in allitems if isinstance(t, dict) and t.get("state") == "open"]
        soft.eq("open items of `tabs --closed` equal `tabs` output", open_part, items, r3.cmd)
        check_closed_tabs(soft, allitems, r3, snap, mapping)
    soft.raise_if_any(header or ("%s does not match Firefox" % os.path.basename(path)))
    return info, items
