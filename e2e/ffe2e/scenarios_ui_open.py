"""Scenario 20: the local page of `ffsession ui` used as a user would, in a
real Firefox: search a tab of an older session as you type, find its
`<script>` title shown as text, pick three of its tabs and *Open now*: the
Firefox running on the profile (on a display of its own with a D-Bus
session bus, as on a desktop: headless Firefox has no remote service) opens
them through its own remote command line."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time

from .checks import Soft, ff_tab_url
from .cli import CheckFailed, Skip
from .firefox import FIREFOX_BIN
from .pages import SCRIPT_TITLE
from .scenarios import sanity_snapshot, scenario
from .scenarios_ui import JS_DO_IT, _wait_text, serving

# On the search page: type arguments[0] into the box as a user does (the
# page's script asks the server as you type).
JS_TYPE = r"""
const q = document.getElementById("q");
if (!q) return "no search box: " + document.body.innerText.slice(0, 300);
q.focus();
q.value = arguments[0];
q.dispatchEvent(new Event("input", { bubbles: true }));
return "ok";
"""

# The link of the result for arguments[0], once the answer is in, and what
# the page holds that a title must not have made: an injected element, or
# the mark its script would set.
JS_RESULT = r"""
const a = [...document.querySelectorAll("#results a")].find(a => a.href === arguments[0]);
return {
  found: !!a,
  text: a ? a.closest("li, tr, div").innerText : "",
  results: (document.getElementById("results") || document.body).innerText.slice(0, 600),
  pwned: document.body.dataset.pwned || null,
  injected: document.querySelectorAll("#results script, #results img[src='x'], body > img[src='x']").length,
};
"""

# On a snapshot's page: check the boxes of the tabs linking to the URLs in
# arguments[0] and press "Pick the checked".
JS_PICK_TABS = r"""
const links = [...document.querySelectorAll("a.url")];
let form = null;
for (const u of arguments[0]) {
  const a = links.find(a => a.href === u);
  if (!a) return "no link to " + u + " in " + document.body.innerText.slice(0, 300);
  const box = a.closest("tr").querySelector("input[type=checkbox]");
  box.checked = true;
  form = box.form;
}
form.querySelector("button[type=submit]").click();
return "ok";
"""

JS_SAFE = r"""
return {
  pwned: document.body.dataset.pwned || null,
  scripts: [...document.scripts].map(s => s.src),
  stray: document.querySelectorAll("img[src='x']").length,
};
"""


class Desktop:
    """A display (Xvfb) and a D-Bus session bus, as a desktop has; stopped
    on exit."""

    def __init__(self, workdir):
        self.procs = []
        self.env = {}
        self.workdir = workdir

    def __enter__(self):
        for tool in ("Xvfb", "dbus-daemon"):
            if not shutil.which(tool):
                raise Skip("%s is missing (e2e/install.sh installs it)" % tool)
        r, w = os.pipe()
        x = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0", "1280x800x24",
                              "-nolisten", "tcp"], pass_fds=(w,), stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
        self.procs.append(x)
        os.close(w)
        with os.fdopen(r) as f:
            display = f.readline().strip()
        if not display.isdigit():
            raise CheckFailed("HARNESS: Xvfb gave no display number")
        d = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--print-address=1",
                              "--address=unix:path=%s" % os.path.join(self.workdir, "bus")],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        self.procs.append(d)
        address = d.stdout.readline().strip()
        if not address.startswith("unix:"):
            raise CheckFailed("HARNESS: dbus-daemon gave no address: %r" % address)
        self.env = {"DISPLAY": ":" + display, "DBUS_SESSION_BUS_ADDRESS": address}
        return self

    def __exit__(self, *exc):
        for p in reversed(self.procs):
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            p.wait()


@scenario(20, "ui: a tab searched as you type on the local page, its <script> title shown as text, "
              "and three tabs of an older snapshot opened now in the running Firefox")
def s20_ui_open_now(ctx):
    """A session of four tabs (one titled with markup) is backed up; Firefox
    then runs on the profile with another tab, on a display with a D-Bus
    session bus. In a second (headless) Firefox the page's search finds the
    markup-titled tab as the user types and shows its title as text (no
    element made, no script run); on the older snapshot's page three tabs
    are picked; the *Open now* plan names `firefox-esr --profile PROFILE
    --new-tab ...` (three), and *Do it* runs it: the running Firefox then
    has the three tabs beside its own."""
    if ctx.firefox_only:
        raise Skip("needs the ffsession binary")
    ctx.cli.require()
    srv = ctx.srv
    old = [srv.url("p", 2000), srv.url("script", 2001), srv.url("p", 2002), srv.url("p", 2003)]
    picked = old[:3]
    mine = srv.url("p", 2010)
    with ctx.firefox() as ff:
        ff.start()
        ff.add_tabs(0, old, replace_first=True)
        ff.flush_and_save()
        sanity_snapshot(ff.snapshot(), windows=1, tabs=4)
        ff.quit()
        profile = ff.profile
    store = ctx.path("ui-store")
    ctx.cli.run("backup", "--profile", profile, "--store", store)
    listed = json.loads(ctx.cli.run("list", "--json", "--profile", profile, "--store", store).stdout)
    snap_id = next((s["id"] for s in listed if s["file_name"] == "sessionstore.jsonlz4"), None)
    if snap_id is None:
        raise CheckFailed("HARNESS: no sessionstore.jsonlz4 snapshot in %s" % listed)

    soft = Soft()
    with Desktop(ctx.dir) as desk, ctx.firefox(profile_dir=profile, desktop_env=desk.env) as running:
        running.start()
        running.add_tabs(0, [mine], replace_first=True)
        env = dict(os.environ)
        env.update(desk.env)
        argv = [ctx.cli.binary, "--profile", profile, "--store", store, "ui", "--no-open",
                "--browser-bin", FIREFOX_BIN]
        cmd = " ".join(argv)
        with serving(argv, env) as base:
            with ctx.firefox() as viewer:
                viewer.start()
                m = viewer.m
                # Search as you type.
                m.navigate(base + "search")
                r = m.execute(JS_TYPE, ["Script 2001"])
                if r != "ok":
                    raise CheckFailed(r)
                deadline = time.monotonic() + 20
                while True:
                    res = m.execute(JS_RESULT, [old[1]])
                    if res["found"] or time.monotonic() > deadline:
                        break
                    time.sleep(0.2)
                soft.true("the search found the tab as the user typed", res["found"],
                          res["results"], cmd)
                soft.true("the <script> title is shown as text in the results",
                          SCRIPT_TITLE in res["text"], res["text"], cmd)
                soft.true("the title made no element and ran no script",
                          res["injected"] == 0 and res["pwned"] is None, res, cmd)
                # The older snapshot: the title as text there too; pick three.
                m.navigate(base + "snapshot/%d" % snap_id)
                page = _wait_text(m, ["Window 1"])
                soft.true("the snapshot page shows the <script> title as text", SCRIPT_TITLE in page,
                          page[:800], cmd)
                safe = m.execute(JS_SAFE)
                soft.true("the snapshot page ran only its own script", safe["pwned"] is None
                          and safe["stray"] == 0 and all(s.endswith("/app.js") for s in safe["scripts"]),
                          safe, cmd)
                r = m.execute(JS_PICK_TABS, [picked])
                if r != "ok":
                    raise CheckFailed("picking on the snapshot page: %s" % r)
                _wait_text(m, ["tab 1 of snapshot", "tabs of snapshot", "of snapshot"])
                m.navigate(base + "plan?action=open")
                plan = _wait_text(m, ["Do it", "A step fails"])
                soft.true("the plan names the browser's command line",
                          "--profile" in plan and profile in plan and plan.count("--new-tab") >= 3
                          and all(u in plan for u in picked), plan[:1500], cmd)
                r = m.execute(JS_DO_IT)
                if r != "ok":
                    raise CheckFailed(r)
                done = _wait_text(m, ["Done.", "A step failed"])
                soft.true("Do it ran the browser's command", "Done." in done, done[:1500], cmd)
                viewer.quit()
            # The running Firefox gets them, as new tabs beside its own.
            want = sorted([mine] + picked)
            deadline = time.monotonic() + 30
            while True:
                snap = running.snapshot()
                got = [[ff_tab_url(t) for t in w["tabs"]] for w in snap["windows"]]
                if sorted(u for w in got for u in w) == want or time.monotonic() > deadline:
                    break
                time.sleep(0.3)
            soft.eq("the running Firefox opened the three tabs beside its own",
                    sorted(u for w in got for u in w), want, cmd)
            running.quit()
    soft.raise_if_any("ui open now")
    return "found by search as typed, its <script> title shown as text; 3 tabs opened now in the running Firefox"
