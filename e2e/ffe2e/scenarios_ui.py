"""Scenario 19: the local page of `ffsession ui`, used in a real Firefox: a
window and a recently closed tab of an older snapshot picked on the page and
added at the next start; Firefox then reopens the profile's current tabs, the
picked window and the closed tab, open."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time

from .checks import Soft, ff_tab_url
from .cli import CheckFailed, Skip
from .scenarios import install_only, sanity_snapshot, scenario, stable_copy

# On a snapshot's page: check the box of the window holding the link to
# arguments[0] and the box of the (recently closed) tab linking to
# arguments[1], and press "Pick the checked".
JS_PICK_WINDOW = r"""
const find = u => [...document.querySelectorAll("a.url")].find(a => a.href === u);
const link = find(arguments[0]), closed = find(arguments[1]);
if (!link || !closed) return "no link to " + arguments + " in " + document.body.innerText.slice(0, 300);
const box = link.closest("section.window").querySelector("h2 input[type=checkbox]");
box.checked = true;
closed.closest("tr").querySelector("input[type=checkbox]").checked = true;
box.form.querySelector("button[type=submit]").click();
return "ok";
"""

JS_TEXT = "return document.body ? document.body.innerText : '';"

JS_DO_IT = r"""
const go = document.querySelector("button.go");
if (!go) return "no Do it button: " + document.body.innerText.slice(0, 600);
go.click();
return "ok";
"""


def _wait_text(m, want, timeout=20.0):
    """Wait until the page's text holds one of `want`; return the text."""
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        try:
            text = m.execute(JS_TEXT) or ""
        except Exception:  # noqa: BLE001 (navigating: no document yet)
            text = ""
        if any(w in text for w in want):
            return text
        time.sleep(0.2)
    raise CheckFailed("the page never said any of %r; it says:\n%s" % (want, text[:1500]))


@contextlib.contextmanager
def serving(argv, env=None):
    """`ffsession ui --no-open` (argv) running; yields the address it
    printed. Stopped by its pid only, with Ctrl-C's signal (it then removes
    its private folder)."""
    ui = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, env=env, start_new_session=True)
    try:
        base = ui.stdout.readline().strip()
        if not base.startswith("http://127.0.0.1:"):
            raise CheckFailed("`ffsession ui` printed no address: %r" % base)
        yield base
    finally:
        ui.send_signal(signal.SIGINT)
        try:
            ui.wait(timeout=10)
        except subprocess.TimeoutExpired:
            ui.kill()
            ui.wait()


@scenario(19, "ui: a window and a closed tab of an older snapshot picked on the local page in "
              "Firefox and added at the next start; Firefox reopens the current tabs, the picked "
              "window and the closed tab")
def s19_ui_pick(ctx):
    """A 2-window session, one tab of its first window closed, is backed up;
    the profile's session then holds one other window. `ffsession ui` serves
    the store; a second Firefox opens its page, picks the older snapshot's
    second window and the closed tab, and on the plan page (which shows the
    extract, with --closed-tab, merge and restore command lines and
    restore's --dry-run answer) presses "Do it". Firefox started on the
    profile reopens the current window, the picked one, and the closed tab
    as an open tab."""
    if ctx.firefox_only:
        raise Skip("needs the ffsession binary")
    ctx.cli.require()
    srv = ctx.srv
    u0 = [srv.url("p", 1900 + i) for i in range(3)]
    u1 = [srv.url("p", 1910 + i) for i in range(3)]
    u2 = [srv.url("p", 1920 + i) for i in range(2)]
    with ctx.firefox() as ff:
        ff.start()
        ff.add_tabs(0, u0, replace_first=True)
        ff.close_tabs(0, [2])  # u0[2]: window 1's recently closed tab
        ff.new_window(u1)
        ff.select_first_window()
        ff.flush_and_save()
        snap0 = ff.snapshot()
        sanity_snapshot(snap0, windows=2, tabs=5)
        if not any(u0[2] in w.get("closed_tab_urls", []) for w in snap0["windows"]):
            raise CheckFailed("HARNESS: %s is no window's closed tab: %s" % (u0[2], snap0["windows"]))
        ff.quit()
        profile = ff.profile
    store = ctx.path("ui-store")
    ctx.cli.run("backup", "--profile", profile, "--store", store)
    listed = json.loads(ctx.cli.run("list", "--json", "--profile", profile, "--store", store).stdout)
    old = next((s for s in listed if s["file_name"] == "sessionstore.jsonlz4"), None)
    if old is None:
        raise CheckFailed("HARNESS: no sessionstore.jsonlz4 snapshot in %s" % listed)
    # The profile's current session: one other window.
    with ctx.firefox() as other:
        other.start()
        other.add_tabs(0, u2, replace_first=True)
        other.flush_and_save()
        other.quit()
        current = stable_copy(other.sessionstore, ctx.path("current.jsonlz4"))
    install_only(profile, current)

    argv = [ctx.cli.binary, "--profile", profile, "--store", store, "ui", "--no-open"]
    soft = Soft()
    cmd = " ".join(argv)
    with serving(argv) as base:
        with ctx.firefox() as viewer:
            viewer.start()
            m = viewer.m
            m.navigate(base + "snapshot/%d" % old["id"])
            r = m.execute(JS_PICK_WINDOW, [u1[0], u0[2]])
            if r != "ok":
                raise CheckFailed("picking on the snapshot page: %s" % r)
            _wait_text(m, ["window 2 of snapshot", "window 1 of snapshot"])
            # The picture of docs/guide/ui.md: the snapshot's page with the
            # picks, as this Firefox shows it.
            m.navigate(base + "snapshot/%d" % old["id"])
            _wait_text(m, ["Picked"])
            png = m.screenshot()
            soft.true("Firefox's screenshot of the page is a PNG", png[:8] == b"\x89PNG\r\n\x1a\n"
                      and len(png) > 5000, "%d bytes: %r" % (len(png), png[:16]), cmd)
            with open(ctx.path("ui.png"), "wb") as f:
                f.write(png)
            shots = os.environ.get("FFSESSION_E2E_SCREENSHOTS")
            if shots:
                with open(os.path.join(shots, "ui.png"), "wb") as f:
                    f.write(png)
            m.navigate(base + "plan?action=add")
            plan = _wait_text(m, ["Do it", "A step fails"])
            soft.true("the plan names the command lines",
                      " extract snapshot:%d --window " % old["id"] in plan
                      and " extract snapshot:%d --closed-tab " % old["id"] in plan
                      and " merge profile:current " in plan and " restore " in plan,
                      plan[:1500], cmd)
            soft.true("the plan shows restore's --dry-run answer", "would write" in plan,
                      plan[:1500], cmd)
            r = m.execute(JS_DO_IT)
            if r != "ok":
                raise CheckFailed(r)
            done = _wait_text(m, ["Done.", "A step failed"])
            soft.true("Do it ran every step", "Done." in done, done[:1500], cmd)
            viewer.quit()
    with ctx.firefox(profile_dir=profile, prefs={"browser.startup.page": 1}) as ff:
        ff.start()
        ff.wait_restored()
        snap = ff.snapshot()
        ff.quit()
    got = [[ff_tab_url(t) for t in w["tabs"]] for w in snap["windows"]]
    soft.eq("Firefox reopened the current window, the picked one and the closed tab",
            sorted(map(tuple, got)), sorted([tuple(u2), tuple(u1), (u0[2],)]), cmd)
    rl = ctx.cli.run("list", "--json", "--profile", profile, "--store", store)
    soft.true("the action left an undo point in the store", len(json.loads(rl.stdout)) > len(listed),
              rl.stdout[:300], rl.cmd)
    soft.raise_if_any("ui")
    return "window 2 and a closed tab of snapshot %d picked on the page, added at the next start: Firefox reopened %d windows" % (
        old["id"], len(got))
