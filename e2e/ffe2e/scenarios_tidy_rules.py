"""Scenario 15: `ffsession tidy` with the rules that rewrite what they keep
(--close-duplicates, --trim-history, --drop-closed, --drop-payload) on a
session Firefox wrote; Firefox must reopen exactly the planned result, and
`restore` of the undo snapshot must bring the original back."""

from __future__ import annotations

import json
import os

from . import mozlz4
from .checks import Soft, ff_tab_url
from .cli import CheckFailed, Skip
from .scenarios import build_rich_session, scenario, stable_copy
from .scenarios_tidy import current_url, run_tidy

TRIM = 1
# What the storage pages append to the keys they write once the original
# session is built (pages.PageServer.storage_mark): an unmarked item in
# Firefox's view can then only have come from the session file.
PAGE_MARK = "-after-build"


def expected_after_tidy(state, trim):
    """What `tidy --close-duplicates --trim-history TRIM --drop-closed
    --drop-payload` must leave, worked out here from the issue's rules: per
    window, each kept tab as (current URL, history entries, index).

    A URL open more than once keeps its most recently used tab (by
    lastAccessed; the first of equals); pinned tabs, each window's selected tab
    and tabs in named groups stay whatever the rules say. History keeps at
    most `trim` entries each side of the current one."""
    best = {}
    for wi, w in enumerate(state["windows"]):
        for i, t in enumerate(w["tabs"]):
            url, used = current_url(t), t.get("lastAccessed") or 0
            if url is not None and (url not in best or used > best[url][0]):
                best[url] = (used, wi, i)
    out = []
    for wi, w in enumerate(state["windows"]):
        selected = min(max(w.get("selected") or 1, 1), max(len(w["tabs"]), 1)) - 1
        named = {g.get("id") for g in w.get("groups") or [] if g.get("name")}
        kept = []
        for i, t in enumerate(w["tabs"]):
            protected = t.get("pinned") or i == selected or t.get("groupId") in named
            url = current_url(t)
            if url is not None and best[url][1:] != (wi, i) and not protected:
                continue
            n = len(t["entries"])
            cur = min(max(t.get("index") or n, 1), n) - 1
            start, end = max(cur - trim, 0), min(cur + trim + 1, n)
            kept.append((url, end - start, cur - start + 1))
        out.append(kept)
    return out


def firefox_tabs(snap):
    """Per window, each tab as (URL, history entries, index), from Firefox."""
    return [[(ff_tab_url(t), t["ss_entries"], t["ss_index"]) for t in w["tabs"]]
            for w in snap["windows"]]


def file_tabs(state):
    """Per window, each tab of a session file as (current URL, history entries, index)."""
    return [[(current_url(t), len(t["entries"]), t.get("index")) for t in w["tabs"]]
            for w in state["windows"]]


def file_payload(state):
    """What a session file holds that --drop-closed and --drop-payload remove."""
    tabs = [t for w in state["windows"] for t in w["tabs"]]
    return {"closed tabs per window": [len(w.get("_closedTabs") or []) for w in state["windows"]],
            "closed windows": len(state.get("_closedWindows") or []),
            "tabs with form data": sum(1 for t in tabs if t.get("formdata")),
            "tabs with session storage": sum(1 for t in tabs if t.get("storage")),
            "tabs with a data: favicon": sum(1 for t in tabs
                                             if (t.get("image") or "").startswith("data:"))}


NO_PAYLOAD = {"closed tabs per window": None, "closed windows": 0, "tabs with form data": 0,
              "tabs with session storage": 0, "tabs with a data: favicon": 0}


def typed_values(formdata):
    """The non-empty values of a tab's form data, as (field, value): Firefox
    also records a field no one typed into (an empty textarea, as "")."""
    out = []
    for kind in ("id", "xpath"):
        for field, value in ((formdata or {}).get(kind) or {}).items():
            if value not in ("", None, False):
                out.append((field, json.dumps(value, ensure_ascii=False)))
    return out


def from_the_file(snap):
    """What of Firefox's view of its session only the session file it read can
    have given it, per tab URL: typed form values (no test page fills a field),
    sessionStorage items without PAGE_MARK (a storage page loaded since the
    original was built writes marked ones, so what a page does after loading
    is not counted), and the data: favicon of a tab not loaded yet."""
    out = {"form data": [], "session storage": [], "data: favicons (not loaded)": []}
    for w in snap["windows"]:
        for t in w["tabs"]:
            url = ff_tab_url(t)
            out["form data"] += [(url, f, v) for f, v in typed_values(t["formdata"])]
            out["session storage"] += [(url, origin, k, v)
                                       for origin, items in (t["storage"] or {}).items()
                                       for k, v in items.items() if not k.endswith(PAGE_MARK)]
            if t["pending"] and (t["image"] or "").startswith("data:"):
                out["data: favicons (not loaded)"].append(url)
    return {k: sorted(v) for k, v in out.items()}


def closed_counts(snap):
    return ([w["closed_tabs"] for w in snap["windows"]], snap["closed_window_count"])


def start_default(ctx, profile):
    """Firefox with the default startup page on `profile`: its snapshot once restored."""
    with ctx.firefox(profile_dir=profile) as ff:
        ff.start()
        ff.wait_restored()
        snap = ff.snapshot()
        ff.quit()
    return snap


@scenario(15, "tidy --close-duplicates --trim-history 1 --drop-closed --drop-payload: Firefox "
              "reopens exactly the planned tabs and histories; undo brings the original back")
def s15_tidy_rewrite(ctx):
    """A rich session written by Firefox (3 windows, back/forward history, pinned,
    hidden, container and grouped tabs, form data, session storage, data: favicons,
    closed tabs and a closed window) plus one page open three times. `tidy` with the
    four rules that rewrite what they keep. The file tidy wrote must hold per window
    exactly the tabs worked out here from the rules, each at its current page with its
    trimmed history, and no closed tabs or windows, form data, storage or data:
    favicons; Firefox at a default start must reopen exactly those tabs and histories,
    with no closed tabs or windows, and nothing of the dropped payload may come back
    from the file (pages that write session storage on load do so under a mark);
    `restore` of the undo snapshot must give back the original."""
    if ctx.firefox_only:
        raise Skip("needs the ffsession binary")
    ctx.cli.require()
    try:
        return tidy_and_undo(ctx)
    finally:
        ctx.srv.storage_mark = ""


def tidy_and_undo(ctx):
    srv = ctx.srv
    dup = srv.url("p", 600)
    with ctx.firefox() as ff:
        ff.start()
        build_rich_session(ctx, ff)
        ff.add_tabs(0, [dup])
        ff.add_tabs(1, [dup])
        ff.add_tabs(0, [dup])
        ff.select_first_window()
        ff.flush_and_save()
        # Firefox's own view of the original, as the undo must give it back.
        before = ff.snapshot()
        ff.quit()
        profile = ff.profile
    # From now on a storage page's items are marked as written after the build.
    srv.storage_mark = PAGE_MARK
    # What tidy reads: the file Firefox wrote at quit.
    original_file = stable_copy(os.path.join(profile, "sessionstore.jsonlz4"),
                                ctx.path("original.jsonlz4"))
    expected = expected_after_tidy(mozlz4.load_json(original_file), TRIM)
    soft = Soft()
    want_before = firefox_tabs(before)
    original_payload = from_the_file(before)
    if (closed_counts(before)[1] < 1 or not original_payload["form data"]
            or not original_payload["session storage"]
            or sum(1 for w in want_before for t in w if t[0] == dup) != 3
            or not any(n > 1 + 2 * TRIM for w in want_before for _, n, _ in w)):
        raise CheckFailed("HARNESS: the original lacks what the rules act on: closed %r, "
                          "payload %r, tabs %s" % (closed_counts(before), original_payload,
                                                   json.dumps(want_before)[:600]))

    store = ctx.path("store")
    base = ("--profile", profile, "--store", store)
    rules = ("--close-duplicates", "--trim-history", str(TRIM), "--drop-closed", "--drop-payload")
    r, undo = run_tidy(ctx, base, *rules)

    # What tidy wrote, before Firefox (or any page) runs on it.
    tidied = mozlz4.load_json(stable_copy(os.path.join(profile, "sessionstore.jsonlz4"),
                                          ctx.path("tidied.jsonlz4")))
    soft.eq("the file tidy wrote holds exactly the planned tabs, each at its page with its "
            "trimmed history (URL, entries, index per tab, per window)", file_tabs(tidied),
            expected, r.cmd)
    soft.eq("the file tidy wrote holds no closed tabs or windows, form data, session storage "
            "or data: favicons", file_payload(tidied),
            dict(NO_PAYLOAD, **{"closed tabs per window": [0] * len(tidied["windows"])}), r.cmd)

    after = start_default(ctx, profile)
    got = firefox_tabs(after)
    soft.eq("Firefox reopened exactly the planned tabs, each at its page with its trimmed "
            "history (URL, entries, index per tab, per window)", got, expected, r.cmd)
    soft.eq("one tab of the page open three times", sum(1 for w in got for t in w if t[0] == dup),
            1, r.cmd)
    soft.eq("no closed tabs or windows", closed_counts(after),
            ([0] * len(after["windows"]), 0), r.cmd)
    soft.eq("Firefox got no form data, session storage or data: favicon from the file",
            from_the_file(after), {k: [] for k in original_payload}, r.cmd)

    rr = ctx.cli.run(*base, "restore", undo)
    back = start_default(ctx, profile)
    soft.eq("restore of the undo snapshot: Firefox reopened the original tabs and histories",
            firefox_tabs(back), want_before, rr.cmd)
    soft.eq("restore of the undo snapshot: closed tabs and windows back", closed_counts(back),
            closed_counts(before), rr.cmd)
    soft.eq("restore of the undo snapshot: typed form data and session storage back",
            {k: v for k, v in from_the_file(back).items() if k != "data: favicons (not loaded)"},
            {k: v for k, v in original_payload.items() if k != "data: favicons (not loaded)"},
            rr.cmd)
    soft.raise_if_any("tidy rules")
    n_before = sum(map(len, want_before))
    return ("%d -> %d tabs (a page open 3 times kept once), histories trimmed to %d entry each "
            "side, closed tabs/windows and form data/storage dropped: the file and Firefox hold "
            "exactly the planned tabs; undo brought back all %d with their histories and "
            "closed items" % (n_before, sum(map(len, got)), TRIM, n_before))
