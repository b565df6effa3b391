"""Scenario 22: search as you type on the local page of `ffsession ui`, in a
real Firefox, by the start of a word: typing `Ünïc` (real key events, one
at a time, as a user types) finds the tab titled `... Ünïcødé ...`, and only
that one (issue 45: the page matched whole words only, so the start of a
word found nothing)."""

from __future__ import annotations

import json
import time

from .checks import Soft
from .cli import CheckFailed, Skip
from .pages import title_for
from .scenarios import sanity_snapshot, scenario
from .scenarios_ui import serving

# The results under the search box: the links' targets, and their text.
JS_RESULTS = r"""
const r = document.getElementById("results");
if (!r) return {links: [], text: document.body.innerText.slice(0, 600)};
return {links: [...r.querySelectorAll("a.url")].map(a => a.href), text: r.innerText.slice(0, 1500)};
"""


@scenario(22, "ui: the start of a word typed in the local page's search box finds the tab as you type")
def s22_ui_search_prefix(ctx):
    """A session of four tabs is backed up; exactly one is titled with the
    word `Ünïcødé`. `ffsession ui --no-open` serves the store; in Firefox,
    on the page's search, `Ünïc` is typed into the box with real key events:
    the results, which the page's script asks for as you type, must list
    that tab and no other, and the command line the page shows must be the
    search it ran (`search 'Ünïc*'`). Before issue 45 the box found whole
    words only: no result."""
    if ctx.firefox_only:
        raise Skip("needs the ffsession binary")
    ctx.cli.require()
    srv = ctx.srv
    # Titles cycle through variants: n % 8 == 1 is the Ünïcødé one.
    urls = [srv.url("p", n) for n in (2104, 2105, 2106, 2107)]
    wanted = urls[1]
    if "Ünïcødé" not in title_for("p", 2105) or any(
            "Ünïcødé" in title_for("p", n) for n in (2104, 2106, 2107)):
        raise CheckFailed("HARNESS: the titles are not what the scenario expects")
    with ctx.firefox() as ff:
        ff.start()
        ff.add_tabs(0, urls, replace_first=True)
        ff.flush_and_save()
        sanity_snapshot(ff.snapshot(), windows=1, tabs=4)
        ff.quit()
        profile = ff.profile
    store = ctx.path("ui-store")
    ctx.cli.run("backup", "--profile", profile, "--store", store)
    listed = json.loads(ctx.cli.run("list", "--json", "--profile", profile, "--store", store).stdout)
    if not listed:
        raise CheckFailed("HARNESS: nothing backed up")

    argv = [ctx.cli.binary, "--profile", profile, "--store", store, "ui", "--no-open"]
    cmd = " ".join(argv)
    soft = Soft()
    with serving(argv) as base:
        with ctx.firefox() as viewer:
            viewer.start()
            m = viewer.m
            m.navigate(base + "search")
            box = m.find_element("css selector", "#q")
            for ch in "Ünïc":
                m.send_keys(box, ch)
                time.sleep(0.05)
            deadline = time.monotonic() + 20
            while True:
                res = m.execute(JS_RESULTS)
                if wanted in res["links"] or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            # The last answer is in once the shown command line is the full word typed.
            while "Ünïc*" not in res["text"] and time.monotonic() < deadline:
                time.sleep(0.2)
                res = m.execute(JS_RESULTS)
            soft.true("typing the start of a word found the tab", wanted in res["links"],
                      res["text"], cmd)
            soft.eq("and no other tab", [u for u in res["links"] if u in urls], [wanted], cmd)
            soft.true("the page shows the search it ran", "search 'Ünïc*'" in res["text"],
                      res["text"], cmd)
            viewer.quit()
    soft.raise_if_any("ui search")
    return "typed Ünïc, found %s (and only it) as typed" % wanted
