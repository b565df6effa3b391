"""Scenario 14: a rescued window cut before its tab groups, which Firefox
defers at a default start."""

from __future__ import annotations

import json
import time

from .checks import Soft, ff_tab_url
from .cli import CheckFailed, Skip
from .scenarios import install_only, scenario
from . import mozlz4

# Whether Firefox set the deferred session aside for History > Restore
# Previous Session (it does not when it finds the file invalid), then that
# restore; returns the number of windows after it.
JS_RESTORE_LAST = r"""
const { SessionStore } = ChromeUtils.importESModule(
  "resource:///modules/sessionstore/SessionStore.sys.mjs");
await SessionStore.promiseInitialized;
if (!SessionStore.canRestoreLastSession) return -1;
SessionStore.restoreLastSession();
return 0;
"""


def current_urls(state):
    return [[t["entries"][t["index"] - 1]["url"] for t in w["tabs"]] for w in state["windows"]]


@scenario(14, "rescue: a window cut before its tab groups; Firefox, at a default start, "
              "keeps it for Restore Previous Session and restores exactly the rescued tabs")
def s14_rescue_groups(ctx):
    """Firefox writes a session whose second window has a tab group (Firefox
    writes a window's groups after its tabs); the file is cut in that window's
    last tab, after the grouped ones; `rescue` keeps the complete tabs and drops
    the group they named (Firefox, deferring a session whose tab names a group
    its window lacks, throws and sets nothing aside). Installed in a profile
    with default startup prefs (the session deferred), Firefox offers Restore
    Previous Session and restores exactly the rescued tabs."""
    if ctx.firefox_only:
        raise Skip("needs the ffsession binary")
    ctx.cli.require()
    srv = ctx.srv
    u0 = [srv.url("p", 5000 + i) for i in range(3)]
    u1 = [srv.url("p", 5100 + i) for i in range(6)]
    with ctx.firefox() as ff:
        ff.start()
        ff.add_tabs(0, u0, replace_first=True)
        ff.new_window(u1)
        ff.group_tabs(1, [0, 1, 2], "kept tabs")
        ff.select_first_window()
        ff.flush_and_save()
        ff.quit()
        profile = ff.profile
        state = mozlz4.load_json(ff.sessionstore)
    text = json.dumps(state, separators=(",", ":"), ensure_ascii=False)
    win = next((w for w in state["windows"] if any(t.get("groupId") for t in w["tabs"])), None)
    if win is None or list(win)[:2] != ["tabs", "groups"]:
        raise CheckFailed("HARNESS: no window with its tabs, then its groups: %s"
                          % (list(win)[:4] if win else None))
    grouped = sum(1 for t in win["tabs"][:-1] if t.get("groupId"))
    if grouped == 0:
        raise CheckFailed("HARNESS: no grouped tab before the window's last one")
    last = json.dumps(win["tabs"][-1], separators=(",", ":"), ensure_ascii=False)
    cut_at = text.index(last) + len(last) // 2
    cut = ctx.path("cut.js")
    with open(cut, "w", encoding="utf-8") as f:
        f.write(text[:cut_at])
    rescued = ctx.path("rescued.jsonlz4")
    r = ctx.cli.run("rescue", cut, "-o", rescued, "--json")
    report = json.loads(r.stdout)
    got = mozlz4.load_json(rescued)
    soft = Soft()
    kept = [t for w in got["windows"] for t in w["tabs"]]
    soft.eq("rescue kept the 8 complete tabs", len(kept), 8, r.cmd)
    soft.true("no rescued tab names a group", not any(t.get("groupId") for t in kept),
              r.stdout[:400], r.cmd)
    soft.true("rescue says the group was dropped",
              any(d.startswith("the tab group of %d tab" % grouped) for d in report["dropped"]),
              r.stdout[:600], r.cmd)
    soft.raise_if_any("rescue groups")
    # Installed as the profile's only session file; default startup prefs, so
    # Firefox defers it.
    install_only(profile, rescued)
    want = sorted(map(tuple, current_urls(got)))
    with ctx.firefox(profile_dir=profile) as ff:
        ff.start()
        offered = ff.chrome(JS_RESTORE_LAST)
        soft.eq("Firefox offers Restore Previous Session", offered, 0)
        snap, deadline = ff.snapshot(), time.time() + 60
        while offered == 0 and time.time() < deadline:
            tabs = sorted(tuple(ff_tab_url(t) for t in w["tabs"]) for w in snap["windows"])
            if tabs == want:
                break
            time.sleep(0.5)
            snap = ff.snapshot()
        ff.quit()
    soft.eq("Restore Previous Session reopened exactly the rescued tabs (multiset of windows)",
            sorted(tuple(ff_tab_url(t) for t in w["tabs"]) for w in snap["windows"]), want)
    soft.raise_if_any("rescue groups")
    return ("window cut in its last tab, after %d grouped tabs: rescue kept %d tabs, ungrouped; "
            "Firefox offered Restore Previous Session and reopened exactly them" % (grouped, len(kept)))
