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


def payload_counts(snap):
    """Tabs holding form data, session storage, and (not yet loaded) a data: favicon."""
    tabs = [t for w in snap["windows"] for t in w["tabs"]]
    return {"formdata": sum(1 for t in tabs if t["formdata"]),
            "storage": sum(1 for t in tabs if t["storage"]),
            "data_icon_pending": sum(1 for t in tabs if t["pending"]
                                     and (t["image"] or "").startswith("data:"))}


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
    four rules that rewrite what they keep; Firefox at a default start must reopen
    per window exactly the tabs worked out here from the rules, each at its current
    page with its trimmed history, with no closed tabs or windows and no form data
    or storage; `restore` of the undo snapshot must give back the original."""
    if ctx.firefox_only:
        raise Skip("needs the ffsession binary")
    ctx.cli.require()
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
    # What tidy reads: the file Firefox wrote at quit.
    original_file = stable_copy(os.path.join(profile, "sessionstore.jsonlz4"),
                                ctx.path("original.jsonlz4"))
    expected = expected_after_tidy(mozlz4.load_json(original_file), TRIM)
    soft = Soft()
    want_before = firefox_tabs(before)
    original_payload = payload_counts(before)
    if (closed_counts(before)[1] < 1 or not original_payload["formdata"]
            or not original_payload["storage"]
            or sum(1 for w in want_before for t in w if t[0] == dup) != 3
            or not any(n > 1 + 2 * TRIM for w in want_before for _, n, _ in w)):
        raise CheckFailed("HARNESS: the original lacks what the rules act on: closed %r, "
                          "payload %r, tabs %s" % (closed_counts(before), original_payload,
                                                   json.dumps(want_before)[:600]))

    store = ctx.path("store")
    base = ("--profile", profile, "--store", store)
    rules = ("--close-duplicates", "--trim-history", str(TRIM), "--drop-closed", "--drop-payload")
    r, undo = run_tidy(ctx, base, *rules)

    after = start_default(ctx, profile)
    got = firefox_tabs(after)
    soft.eq("Firefox reopened exactly the planned tabs, each at its page with its trimmed "
            "history (URL, entries, index per tab, per window)", got, expected, r.cmd)
    soft.eq("one tab of the page open three times", sum(1 for w in got for t in w if t[0] == dup),
            1, r.cmd)
    soft.eq("no closed tabs or windows", closed_counts(after),
            ([0] * len(after["windows"]), 0), r.cmd)
    soft.eq("no form data, session storage or data: favicons", payload_counts(after),
            {"formdata": 0, "storage": 0, "data_icon_pending": 0}, r.cmd)

    rr = ctx.cli.run(*base, "restore", undo)
    back = start_default(ctx, profile)
    soft.eq("restore of the undo snapshot: Firefox reopened the original tabs and histories",
            firefox_tabs(back), want_before, rr.cmd)
    soft.eq("restore of the undo snapshot: closed tabs and windows back", closed_counts(back),
            closed_counts(before), rr.cmd)
    soft.eq("restore of the undo snapshot: form data and storage back",
            {k: v for k, v in payload_counts(back).items() if k != "data_icon_pending"},
            {k: v for k, v in original_payload.items() if k != "data_icon_pending"}, rr.cmd)
    soft.raise_if_any("tidy rules")
    n_before = sum(map(len, want_before))
    return ("%d -> %d tabs (a page open 3 times kept once), histories trimmed to %d entry each "
            "side, closed tabs/windows and form data/storage dropped: Firefox reopened exactly "
            "the planned tabs; undo brought back all %d with their histories and closed items"
            % (n_before, sum(map(len, got)), TRIM, n_before))

