"""The end-to-end scenarios.  Each is a function taking a Ctx; it returns a
short detail string on success, raises CheckFailed on a mismatch and Skip
when it cannot run.  Scenarios marked `placeholder` are not run yet."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections import Counter

from . import mozlz4
from .checks import Soft, check_session_file, expected_from_snapshot, ff_tab_url
from .cli import CheckFailed, Skip
from .firefox import Firefox

SCENARIOS = []


def scenario(num, name, placeholder=None):
    def deco(fn):
        SCENARIOS.append({"num": num, "name": name, "fn": fn, "placeholder": placeholder,
                          "doc": (fn.__doc__ or "").strip().splitlines()[0] if fn.__doc__ else ""})
        return fn
    return deco


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def now_ms():
    return int(time.time() * 1000)


def stable_copy(src, dst):
    """Copy a session file Firefox may rewrite at any moment (it writes a
    temp file and renames it, so a single copy is always consistent)."""
    shutil.copyfile(src, dst)
    return dst


def _desc(r):
    return r.describe() if r is not None else "(harness codec)"


def sanity_snapshot(snap, windows=None, tabs=None, urls=None):
    """Make sure Firefox really is in the state the scenario built (guards
    against a harness bug being reported as an ffsession bug)."""
    soft = Soft()
    if windows is not None:
        soft.eq("Firefox window count", len(snap["windows"]), windows)
    if tabs is not None:
        soft.eq("Firefox tab count", sum(len(w["tabs"]) for w in snap["windows"]), tabs)
    for wi, w in enumerate(snap["windows"]):
        for ti, t in enumerate(w["tabs"]):
            if not t.get("pending"):
                soft.eq("Firefox w%d t%d live URL == SessionStore URL" % (wi, ti), t["ss_url"], t["url"])
    if urls is not None:
        got = Counter(ff_tab_url(t) for w in snap["windows"] for t in w["tabs"])
        soft.eq("Firefox tab URLs", sorted(got.elements()), sorted(Counter(urls).elements()))
    soft.raise_if_any("HARNESS: Firefox is not in the expected state")


def save_fixture(ctx, name, path, snap):
    """Copy a real session file plus Firefox's answer for it into --save-fixtures DIR."""
    if not ctx.save_fixtures:
        return
    os.makedirs(ctx.save_fixtures, exist_ok=True)
    dst = os.path.join(ctx.save_fixtures, name + ".jsonlz4")
    shutil.copyfile(path, dst)
    exp = expected_from_snapshot(snap)
    exp["source"] = ("real Firefox %s session file written by e2e/run.py; pages served from "
                     "127.0.0.1 (port differs per run)" % ctx.firefox_version)
    with open(os.path.join(ctx.save_fixtures, name + ".expected.json"), "w", encoding="utf-8") as f:
        json.dump(exp, f, ensure_ascii=False, indent=1, sort_keys=True)
        f.write("\n")
    ctx.fixtures.append(dst)


def ff_checks(ctx, path, snap, since_ms, label, closed=True):
    """Run the ffsession comparison unless --firefox-only."""
    if ctx.firefox_only:
        return None
    ctx.cli.require()
    return check_session_file(ctx.cli, path, snap, since_ms=since_ms, closed=closed,
                              header="%s: ffsession output differs from Firefox" % label)


# ---------------------------------------------------------------------------
# scenarios
# ---------------------------------------------------------------------------

def check_lock(ctx, profile, running):
    """`ffsession profiles --json` says whether Firefox runs on the profile."""
    r = ctx.cli.run("profiles", "--json", "--profile", profile)
    try:
        state = json.loads(r.stdout)[0]["lock"]["state"]
    except (ValueError, LookupError, TypeError) as e:
        raise CheckFailed("profiles --json: no lock state (%s)\n%s" % (e, r.describe()))
    if (state == "running") != running:
        raise CheckFailed("profiles --json says lock state %r while Firefox %s\n%s"
                          % (state, "runs" if running else "has quit", r.describe()))


@scenario(1, "one window, 3 tabs")
def s1_basic(ctx):
    """1 window / 3 tabs: info + tabs of recovery.jsonlz4 (running) and sessionstore.jsonlz4 (after quit)."""
    srv = ctx.srv
    urls = [srv.url("p", 1), srv.url("p", 2, "q=a%20b&x=%C3%BC"), srv.url("icon", 5)]
    since = now_ms()
    with ctx.firefox() as ff:
        ff.start()
        ff.add_tabs(0, urls, replace_first=True)
        ff.flush_and_save()
        snap = ff.snapshot()
        sanity_snapshot(snap, windows=1, tabs=3, urls=urls)
        rec = stable_copy(ff.recovery, ctx.path("recovery.jsonlz4"))
        ff_checks(ctx, rec, snap, since, "recovery.jsonlz4 (running)")
        save_fixture(ctx, "s1-recovery", rec, snap)
        check_lock(ctx, ff.profile, running=True)
        snap_q = ff.snapshot()
        ff.quit()
        check_lock(ctx, ff.profile, running=False)
        if not os.path.exists(ff.sessionstore):
            raise CheckFailed("HARNESS: no sessionstore.jsonlz4 after a clean quit")
        ss = stable_copy(ff.sessionstore, ctx.path("sessionstore.jsonlz4"))
        ff_checks(ctx, ss, snap_q, since, "sessionstore.jsonlz4 (after quit)")
        save_fixture(ctx, "s1-sessionstore", ss, snap_q)
    return "recovery + sessionstore: 1 window, 3 tabs match"


def build_rich_session(ctx, ff):
    """3 open windows (50 tabs), history, pinned, container, hidden and grouped
    tabs, form data, sessionStorage, data: favicons, closed tabs and a closed window."""
    srv = ctx.srv
    # Window 0: 20 tabs of every kind.
    w0 = []
    for i in range(20):
        kind = ["p", "form", "storage", "icon"][i % 4] if i < 12 else "p"
        w0.append(srv.url(kind, 200 + i))
    ff.add_tabs(0, w0, replace_first=True)
    ff.add_tabs(0, [srv.url("p", 230)], container=1)          # container tab (Personal)
    ff.add_tabs(0, [srv.url("p", 231, "c=2")], container=2)   # container tab (Work)
    # history: tab 3 goes through 3 more pages then back once (forward entry kept)
    nav = ff.navigate(0, 3, [srv.url("p", 240), srv.url("p", 241), srv.url("p", 242)], back=1)
    if nav["url"] != srv.url("p", 241):
        raise CheckFailed("HARNESS: back navigation ended on %r" % nav["url"])
    # tab 6: two pages then back twice (at the first page, two forward entries)
    ff.navigate(0, 6, [srv.url("p", 243), srv.url("p", 244)], back=2)
    # typed form data (real key events) in the form page at index 1
    ff.type_into(0, 1, "#name", 'Typed "Ünïcødé" <&> 🦊')
    ff.type_into(0, 1, "#comment", "line one\nline two")
    ff.select_first_window()
    ff.pin(0, 10)                                              # moves to position 0
    ff.close_tabs(0, [15])                                     # one closed tab in window 0
    # Window 1: 16 tabs, close 2 of them.
    ff.new_window([srv.url("p", 300 + i) for i in range(16)])
    ff.navigate(1, 2, [srv.url("p", 320), srv.url("p", 321)], back=0)
    ff.close_tabs(1, [5, 9])
    ff.hide_tab(1, 10)                                         # hidden tab
    # Window 2: 15 tabs.
    ff.new_window([srv.url(["p", "icon", "storage"][i % 3], 400 + i) for i in range(15)])
    ff.pin(2, 4)
    ff.group_tabs(2, [6, 7, 8], 'Grüppe "Ω" <&> 🦊')            # tab group (moved to the end)
    # Window 3: 5 tabs, then closed -> a closed window.
    ff.new_window([srv.url("p", 500 + i) for i in range(5)])
    ff.close_window(3)
    ff.select_first_window()


@scenario(2, "3 windows, 50 tabs, history/pinned/group/closed/form")
def s2_rich(ctx):
    """3 windows / 50 tabs with back/forward history, pinned, container, hidden and grouped
    tabs, closed tabs, a closed window, typed form data: counts, current URLs (entry at
    each tab's index), titles, pinned/hidden/container/group, history length and closed
    items match."""
    since = now_ms()
    with ctx.firefox() as ff:
        ff.start()
        build_rich_session(ctx, ff)
        ff.flush_and_save()
        snap = ff.snapshot()
        sanity_snapshot(snap, windows=3, tabs=21 + 14 + 15)
        soft = Soft()
        soft.eq("Firefox closed windows", snap["closed_window_count"], 1)
        soft.eq("Firefox closed tabs per window", sorted(w["closed_tabs"] for w in snap["windows"]), [0, 1, 2])
        form = [t for w in snap["windows"] for t in w["tabs"] if t.get("formdata")]
        soft.true("Firefox recorded the typed form data", form and "Ünïcødé" in json.dumps(form[0]["formdata"], ensure_ascii=False),
                  repr(form[:1]))
        alltabs = [t for w in snap["windows"] for t in w["tabs"]]
        soft.eq("Firefox hidden tabs", sum(t["hidden"] for t in alltabs), 1)
        soft.eq("Firefox grouped tabs", sum(1 for t in alltabs if t["group"]), 3)
        soft.eq("Firefox container tabs", sorted(t["container"] for t in alltabs if t["container"]), [1, 2])
        soft.raise_if_any("HARNESS: Firefox is not in the expected state")
        rec = stable_copy(ff.recovery, ctx.path("recovery.jsonlz4"))
        ff_checks(ctx, rec, snap, since, "recovery.jsonlz4 (running)")
        check_decompressed_payload(ctx, rec)
        save_fixture(ctx, "s2-recovery", rec, snap)
        snap_q = ff.snapshot()
        ff.quit()
        ss = stable_copy(ff.sessionstore, ctx.path("sessionstore.jsonlz4"))
        ff_checks(ctx, ss, snap_q, since, "sessionstore.jsonlz4 (after quit)")
        save_fixture(ctx, "s2-sessionstore", ss, snap_q)
    n = sum(len(w["tabs"]) for w in snap["windows"])
    return "3 windows, %d tabs, 3 closed tabs, 1 closed window match (running + after quit)" % n


def check_decompressed_payload(ctx, path):
    """`ffsession decompress` must give the exact JSON Firefox wrote (form data,
    sessionStorage, data: favicons included); cross-checked with the harness's
    own pure-Python mozlz4 reader."""
    if ctx.firefox_only:
        return
    out = ctx.path(os.path.basename(path) + ".json")
    r = ctx.cli.decompress(path, out)
    try:
        with open(out, "rb") as f:
            got = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError) as e:
        raise CheckFailed("decompressed output is not JSON (%s)\n%s" % (e, r.describe()))
    ref = mozlz4.load_json(path)
    soft = Soft()
    soft.true("`ffsession decompress` output equals the file's JSON", got == ref,
              "differs from the harness's own decoding", r.cmd)
    blob = json.dumps(got, ensure_ascii=False)
    soft.true("decompressed JSON keeps typed form data", 'Typed \\"Ünïcødé\\" <&> 🦊' in blob, "", r.cmd)
    soft.true("decompressed JSON keeps sessionStorage", "value-202 Ünï" in blob, "", r.cmd)
    soft.true("decompressed JSON keeps data: favicons", '"image": "data:image/png;base64,' in blob, "", r.cmd)
    soft.raise_if_any("decompress check")


@scenario(3, "~500 tabs")
def s3_many(ctx):
    """~500 tabs in 2 windows: counts and URLs match; prints ffsession's wall time."""
    srv = ctx.srv
    u0 = [srv.url("p", 1000 + i) for i in range(400)]
    u1 = [srv.url("p", 2000 + i, "n=%d" % i) for i in range(100)]
    since = now_ms()
    with ctx.firefox() as ff:
        ff.start()
        for b in range(0, len(u0), 100):
            ff.add_tabs(0, u0[b:b + 100], replace_first=(b == 0))
        ff.new_window(u1)
        ff.select_first_window()
        ff.flush_and_save()
        snap = ff.snapshot()
        sanity_snapshot(snap, windows=2, tabs=500, urls=u0 + u1)
        rec = stable_copy(ff.recovery, ctx.path("recovery.jsonlz4"))
        size = os.path.getsize(rec)
        ff.quit()
    if ctx.firefox_only:
        return "Firefox side only: 500 tabs, recovery.jsonlz4 %d bytes" % size
    ctx.cli.require()
    check_session_file(ctx.cli, rec, snap, since_ms=since, closed=False,
                       header="500-tab recovery.jsonlz4: ffsession output differs from Firefox")
    times = []
    for _ in range(3):
        _, r = ctx.cli.info(rec)
        times.append(r.seconds)
    _, rt = ctx.cli.tabs(rec)
    return ("500 tabs match; file %d bytes; `ffsession info` wall time %.1f ms (min of 3, max %.1f ms); "
            "`tabs --format json` %.1f ms" % (size, min(times) * 1000, max(times) * 1000, rt.seconds * 1000))


def snapshot_counts(snap):
    """Firefox's answer as the `counts` object of a backup snapshot."""
    return {"windows": len(snap["windows"]),
            "tabs": sum(len(w["tabs"]) for w in snap["windows"]),
            "closed_tabs": sum(w["closed_tabs"] for w in snap["windows"]),
            "closed_windows": snap["closed_window_count"]}


def window_urls(snap):
    """Firefox's windows as a sorted list of per-window URL tuples (a multiset of windows)."""
    return sorted(tuple(ff_tab_url(t) for t in w["tabs"]) for w in snap["windows"])


def by_file(snapshots):
    """{file_name: [snapshot, ...]} of a backup/list answer."""
    out = {}
    for s in snapshots:
        if isinstance(s, dict):
            out.setdefault(s.get("file_name"), []).append(s)
    return out


def file_hashes(profile):
    """sha256 of every session file, prefs.js and user.js of a profile (None if missing)."""
    names = ["sessionstore.jsonlz4", "prefs.js", "user.js"]
    bdir = os.path.join(profile, "sessionstore-backups")
    if os.path.isdir(bdir):
        names += sorted(os.path.join("sessionstore-backups", n) for n in os.listdir(bdir))
    out = {}
    for n in names:
        try:
            with open(os.path.join(profile, n), "rb") as f:
                out[n] = hashlib.sha256(f.read()).hexdigest()[:16]
        except FileNotFoundError:
            out[n] = None
    return out


RECOVERY = "sessionstore-backups/recovery.jsonlz4"
RECOVERY_BAK = "sessionstore-backups/recovery.baklz4"
SESSIONSTORE = "sessionstore.jsonlz4"


@scenario(4, "SIGKILL crash, then `ffsession backup`")
def s4_crash_backup(ctx):
    """SIGKILL Firefox after at least two session writes (recovery.jsonlz4 + recovery.baklz4),
    then `ffsession backup --json`: both files are stored as verified snapshots whose counts
    match what Firefox reported before the kill; `tabs` on the recovery file matches too."""
    srv = ctx.srv
    w0 = [srv.url("p", 900 + i) for i in range(6)]
    w1 = [srv.url("storage", 910 + i) for i in range(4)]
    w2 = [srv.url("icon", 920 + i) for i in range(3)]
    since = now_ms()
    with ctx.firefox() as ff:
        ff.start()
        ff.add_tabs(0, w0, replace_first=True)
        ff.pin(0, 3)
        ff.new_window(w1)
        ff.new_window(w2)
        ff.close_window(2)                                     # a closed window (3 tabs)
        ff.close_tabs(1, [2])                                  # a closed tab in window 1
        ff.select_first_window()
        # Two forced writes: the second moves the first to recovery.baklz4.
        ff.flush_and_save()
        ff.flush_and_save()
        if not os.path.exists(ff.recovery_bak):
            ff.flush_and_save()
        snap = ff.snapshot()
        sanity_snapshot(snap, windows=2, tabs=6 + 3, urls=w0 + [u for i, u in enumerate(w1) if i != 2])
        soft = Soft()
        soft.eq("Firefox closed windows", snap["closed_window_count"], 1)
        soft.true("recovery.baklz4 exists before the kill", os.path.exists(ff.recovery_bak))
        soft.raise_if_any("HARNESS: Firefox is not in the expected state")
        ff.kill()
        soft = Soft()
        soft.true("recovery.jsonlz4 left after SIGKILL", os.path.exists(ff.recovery))
        soft.true("recovery.baklz4 left after SIGKILL", os.path.exists(ff.recovery_bak))
        soft.true("no sessionstore.jsonlz4 after SIGKILL", not os.path.exists(ff.sessionstore))
        soft.raise_if_any("HARNESS: unexpected files after SIGKILL")
        profile = ff.profile
        rec = stable_copy(ff.recovery, ctx.path("crash-recovery.jsonlz4"))
        bak = stable_copy(ff.recovery_bak, ctx.path("crash-recovery.baklz4"))
    if ctx.firefox_only:
        return "Firefox side only: recovery.jsonlz4 + recovery.baklz4 left after SIGKILL"
    ctx.cli.require()
    store = ctx.path("store")
    doc, r = ctx.cli.backup(profile, store, expect_codes=(0, 3))
    want = snapshot_counts(snap)
    files = by_file(doc["snapshots"])
    soft = Soft()
    soft.eq("backup exit code (store was empty, newest file is good)", r.code, 0, r.cmd)
    soft.eq("backup alarm", doc.get("alarm"), None, r.cmd)
    soft.eq("stored file names", sorted(files, key=str), sorted([RECOVERY, RECOVERY_BAK]), r.cmd)
    ids = []
    for name, path in ((RECOVERY, rec), (RECOVERY_BAK, bak)):
        got = files.get(name) or []
        if len(got) != 1:
            soft.true("exactly one snapshot of %s" % name, False, "got %r" % got, r.cmd)
            continue
        s = got[0]
        ids.append(s.get("id"))
        soft.true("%s snapshot has an integer id" % name, _is_int(s.get("id")), repr(s.get("id")), r.cmd)
        soft.eq("%s snapshot status" % name, s.get("status"), "ok", r.cmd)
        soft.eq("%s snapshot counts (Firefox before the kill)" % name, s.get("counts"), want, r.cmd)
        lu = mozlz4.load_json(path)["session"]["lastUpdate"]
        soft.eq("%s snapshot last_update_ms == the file's session.lastUpdate" % name,
                s.get("last_update_ms"), lu, r.cmd)
    lst, rl = ctx.cli.list_snapshots(profile, store)
    soft.eq("`list --json` ids (newest first) == the snapshots just taken",
            sorted(x.get("id") for x in lst if isinstance(x, dict)), sorted(ids), rl.cmd)
    # Newest first by the session's own time (session.lastUpdate), not by id: after a kill,
    # recovery.jsonlz4 is newer than recovery.baklz4 whichever was stored first.
    times = [x.get("last_update_ms") for x in lst if isinstance(x, dict)]
    soft.eq("`list --json` is newest first (by session.lastUpdate)", times,
            sorted(times, key=lambda t: t or 0, reverse=True), rl.cmd)
    soft.eq("`list --json` first is recovery.jsonlz4 (the newer session)",
            [x.get("file_name") for x in lst[:1] if isinstance(x, dict)], [RECOVERY], rl.cmd)
    for x in lst:
        mine = [s for s in doc["snapshots"] if s.get("id") == x.get("id")]
        if mine:
            for k in ("file_name", "status", "counts", "last_update_ms"):
                soft.eq("`list --json` snapshot %s %s == backup's" % (x.get("id"), k), x.get(k),
                        mine[0].get(k), rl.cmd)
    soft.raise_if_any("backup after SIGKILL")
    # What was stored is what Firefox had: the same file, read by ffsession.
    ff_checks(ctx, rec, snap, since, "recovery.jsonlz4 after SIGKILL (stored by backup)")
    return ("backup stored recovery.jsonlz4 + recovery.baklz4 (status ok, %d windows / %d tabs / "
            "%d closed tabs / %d closed windows = Firefox before SIGKILL); tabs match"
            % (want["windows"], want["tabs"], want["closed_tabs"], want["closed_windows"]))


ONCE = "browser.sessionstore.resume_session_once"
OS_RESTART = "browser.sessionstore.resuming_after_os_restart"

# What SessionStartup decided at this start (see e2e/experiments/RESTORE.md).
JS_STARTUP = r"""
const { SessionStartup } = ChromeUtils.importESModule("resource:///modules/sessionstore/SessionStartup.sys.mjs");
await SessionStartup.onceInitialized;
const names = {0: "NO_SESSION", 1: "RECOVER", 2: "RESUME", 3: "DEFER"};
return {
  sessionType: names[SessionStartup.sessionType] || String(SessionStartup.sessionType),
  startupPage: Services.prefs.getIntPref("browser.startup.page"),
  once: Services.prefs.getBoolPref("browser.sessionstore.resume_session_once", false),
  onceUserSet: Services.prefs.prefHasUserValue("browser.sessionstore.resume_session_once"),
};
"""


def pref_lines(path, name):
    """The lines of a prefs.js/user.js that mention pref `name`."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return [ln.strip() for ln in f if '"%s"' % name in ln]
    except FileNotFoundError:
        return []


def once_true(profile):
    return [ln for ln in pref_lines(os.path.join(profile, "prefs.js"), ONCE)
            if ln.replace(" ", "").endswith(",true);")]


def file_window_urls(path):
    """A session file's open windows as a sorted list of per-window URL tuples
    (the entry at each tab's index)."""
    state = mozlz4.load_json(path)
    out = []
    for w in state.get("windows", []):
        urls = []
        for t in w.get("tabs", []):
            en = t.get("entries") or []
            i = max(1, min(len(en), t.get("index") or len(en)))
            urls.append(en[i - 1].get("url") if en else None)
        out.append(tuple(urls))
    return sorted(out)


def tab_props(snap):
    """Per window: (url, pinned, hidden, container, group) of each tab, as a multiset of windows."""
    return sorted(tuple((ff_tab_url(t), bool(t["pinned"]), bool(t["hidden"]), int(t["container"]),
                         t.get("group")) for t in w["tabs"]) for w in snap["windows"])


def one_snapshot(soft, doc, name, r):
    got = by_file(doc["snapshots"] if isinstance(doc, dict) else doc).get(name) or []
    soft.true("exactly one snapshot of %s" % name, len(got) == 1, "got %r" % got, r.cmd)
    return got[0] if len(got) == 1 else {}


@scenario(5, "`ffsession restore` into a profile")
def s5_restore(ctx):
    """Scenario 2's session is backed up after a clean quit; the user then changes the session;
    `ffsession restore ID` makes the next Firefox start (browser.startup.page=1, no restore)
    reopen exactly the backed-up windows and tabs; Firefox clears the one-shot pref; the undo
    snapshot restores with --dry-run without touching the profile."""
    srv = ctx.srv
    # 1. The session to come back to, saved by a clean quit.
    with ctx.firefox() as ff:
        ff.start()
        build_rich_session(ctx, ff)
        ff.flush_and_save()
        snap = ff.snapshot()
        sanity_snapshot(snap, windows=3, tabs=21 + 14 + 15)
        ff.quit()
        profile = ff.profile
        if not os.path.exists(ff.sessionstore):
            raise CheckFailed("HARNESS: no sessionstore.jsonlz4 after a clean quit")
        saved = stable_copy(ff.sessionstore, ctx.path("saved-sessionstore.jsonlz4"))
    want_urls = window_urls(snap)
    soft = Soft()
    soft.eq("HARNESS: sessionstore.jsonlz4 after quit holds Firefox's windows",
            file_window_urls(saved), want_urls)
    soft.raise_if_any("HARNESS: the saved session is not what Firefox had")
    if ctx.firefox_only:
        return "Firefox side only: saved a 3-window / 50-tab session (restore needs ffsession)"
    ctx.cli.require()
    store = ctx.path("store")
    doc, rb = ctx.cli.backup(profile, store)
    soft = Soft()
    s0 = one_snapshot(soft, doc, SESSIONSTORE, rb)
    soft.eq("backup: sessionstore.jsonlz4 snapshot status", s0.get("status"), "ok", rb.cmd)
    soft.eq("backup: sessionstore.jsonlz4 snapshot counts (Firefox before quit)", s0.get("counts"),
            snapshot_counts(snap), rb.cmd)
    soft.eq("backup: sessionstore.jsonlz4 snapshot last_update_ms == the file's session.lastUpdate",
            s0.get("last_update_ms"), mozlz4.load_json(saved)["session"]["lastUpdate"], rb.cmd)
    soft.raise_if_any("backup after a clean quit")
    snap_id = s0["id"]

    # 2. The user carries on: closes tabs, opens others, closes a window, quits.
    with ctx.firefox(profile_dir=profile) as ff:
        ff.start()
        ff.wait_restored()
        ff.add_tabs(0, [srv.url("p", 960 + i) for i in range(4)])
        ff.close_tabs(0, [0])
        ff.new_window([srv.url("icon", 970 + i) for i in range(3)])
        ff.close_window(ff.new_window([srv.url("p", 980 + i) for i in range(2)]))
        ff.select_first_window()
        ff.flush_and_save()
        snap_changed = ff.snapshot()
        ff.quit()
    if window_urls(snap_changed) == want_urls:
        raise CheckFailed("HARNESS: the changed session equals the saved one")
    soft = Soft()
    soft.eq("HARNESS: sessionstore.jsonlz4 after the second quit holds the changed session",
            file_window_urls(os.path.join(profile, SESSIONSTORE)), window_urls(snap_changed))
    soft.raise_if_any("HARNESS: the changed session")
    before_ids = {x.get("id") for x in ctx.cli.list_snapshots(profile, store)[0]}

    # 3. ffsession restore ID (Firefox stopped).
    r = ctx.cli.restore(snap_id, profile, store)
    soft = Soft()
    ss = os.path.join(profile, SESSIONSTORE)
    try:
        installed = mozlz4.load_json(ss)
    except Exception as e:  # noqa: BLE001
        installed = "unreadable: %s" % e
    soft.true("sessionstore.jsonlz4 holds the snapshot's JSON after restore",
              installed == mozlz4.load_json(saved), "it differs", r.cmd)
    for rel in ("recovery.jsonlz4", "recovery.baklz4", "previous.jsonlz4"):
        soft.true("sessionstore-backups/%s removed by restore" % rel,
                  not os.path.exists(os.path.join(profile, "sessionstore-backups", rel)), "", r.cmd)
    soft.eq("prefs.js resume_session_once line after restore",
            pref_lines(os.path.join(profile, "prefs.js"), ONCE),
            ['user_pref("%s", true);' % ONCE], r.cmd)
    soft.eq("prefs.js has no resuming_after_os_restart line", pref_lines(os.path.join(profile, "prefs.js"), OS_RESTART),
            [], r.cmd)
    lst, rl = ctx.cli.list_snapshots(profile, store)
    new = [x for x in lst if x.get("id") not in before_ids]
    undo = [x for x in new if x.get("file_name") == SESSIONSTORE]
    soft.true("restore backed up the current sessionstore.jsonlz4 (a new snapshot)", len(undo) == 1,
              "new snapshots: %r" % new, rl.cmd)
    undo = undo[0] if len(undo) == 1 else {}
    soft.eq("undo snapshot status", undo.get("status"), "ok", rl.cmd)
    soft.eq("undo snapshot counts == the changed session", undo.get("counts"),
            snapshot_counts(snap_changed), rl.cmd)
    soft.raise_if_any("`ffsession restore %s`" % snap_id)
    with open(ss, "rb") as f:
        installed_bytes = f.read()

    # 4. --dry-run of the undo snapshot changes nothing.
    h0 = file_hashes(profile)
    rd = ctx.cli.restore(undo["id"], profile, store, dry_run=True)
    soft = Soft()
    soft.true("restore --dry-run prints what it would do", rd.stdout.strip() != "", "stdout is empty", rd.cmd)
    soft.eq("profile files after restore --dry-run (sha256)", file_hashes(profile), h0, rd.cmd)
    soft.eq("store after restore --dry-run (ids)", sorted(x.get("id") for x in ctx.cli.list_snapshots(profile, store)[0]),
            sorted(x.get("id") for x in lst), rd.cmd)
    soft.raise_if_any("`ffsession restore --dry-run` of the undo snapshot")

    # 5. Firefox, browser.startup.page=1 (harness default: no restore), reopens the snapshot.
    prefs = {"browser.startup.page": 1}
    with ctx.firefox(profile_dir=profile, prefs=prefs) as ff:
        uj = os.path.join(profile, "user.js")
        ff.start()
        soft = Soft()
        soft.eq("HARNESS: user.js sets no resume pref", pref_lines(uj, ONCE) + pref_lines(uj, OS_RESTART), [])
        soft.eq("HARNESS: user.js browser.startup.page", pref_lines(uj, "browser.startup.page"),
                ['user_pref("browser.startup.page", 1);'])
        soft.raise_if_any("HARNESS: user.js")
        ff.wait_restored()
        diag = ff.chrome(JS_STARTUP)
        snap2 = ff.snapshot()
        soft = Soft()
        soft.eq("Firefox restored windows' URLs (multiset of per-window URL lists) == snapshot",
                window_urls(snap2), want_urls, r.cmd)
        soft.eq("Firefox restored pinned/hidden/container/group per tab == snapshot",
                tab_props(snap2), tab_props(snap), r.cmd)
        soft.eq("Firefox restored counts (windows, tabs, closed tabs, closed windows)",
                snapshot_counts(snap2), snapshot_counts(snap), r.cmd)
        soft.eq("SessionStartup.sessionType", diag.get("sessionType"), "RESUME", r.cmd)
        soft.eq("browser.startup.page in Firefox", diag.get("startupPage"), 1)
        soft.eq("resume_session_once has no user value once Firefox started", diag.get("onceUserSet"), False, r.cmd)
        # Firefox writes prefs.js a moment after clearing the pref.
        end = time.monotonic() + 20
        while once_true(profile) and time.monotonic() < end:
            time.sleep(0.25)
        soft.eq("prefs.js resume_session_once=true lines after Firefox started", once_true(profile), [], r.cmd)
        ff.flush_and_save()
        prev = os.path.join(profile, "sessionstore-backups", "previous.jsonlz4")
        try:
            with open(prev, "rb") as f:
                prev_bytes = f.read()
        except FileNotFoundError:
            prev_bytes = None
        soft.true("Firefox moved the installed sessionstore.jsonlz4 byte for byte to previous.jsonlz4",
                  prev_bytes == installed_bytes, "previous.jsonlz4 %s" % ("missing" if prev_bytes is None else "differs"),
                  r.cmd)
        soft.raise_if_any("Firefox did not reopen the restored snapshot")
        ff.quit()
    soft = Soft()
    soft.eq("prefs.js resume_session_once=true lines after quit", once_true(profile), [], r.cmd)
    soft.raise_if_any("one-shot pref")
    n = sum(len(w) for w in want_urls)
    return ("restore %s: Firefox (startup.page=1) reopened exactly %d windows / %d tabs (+1 closed window) "
            "as RESUME; prefs.js one-shot cleared; undo snapshot %s --dry-run changes nothing"
            % (snap_id, len(want_urls), n, undo["id"]))


@scenario(6, "decompress -> compress round trip restored by Firefox")
def s6_roundtrip(ctx):
    """decompress a real sessionstore.jsonlz4, edit one URL, compress it, install it as the
    profile's sessionstore.jsonlz4 and check Firefox restores exactly those tabs."""
    srv = ctx.srv
    w0 = [srv.url("p", 600 + i) for i in range(6)]
    w1 = [srv.url("icon", 610 + i) for i in range(4)]
    with ctx.firefox() as ff:
        ff.start()
        ff.add_tabs(0, w0, replace_first=True)
        ff.pin(0, 2)
        ff.new_window(w1)
        ff.select_first_window()
        ff.flush_and_save()
        sanity_snapshot(ff.snapshot(), windows=2, tabs=10)
        ff.quit()
        profile = ff.profile
        orig = stable_copy(ff.sessionstore, ctx.path("original.jsonlz4"))
        x = ctx.path("x.json")
        y = ctx.path("y.jsonlz4")
        if ctx.firefox_only:
            # Harness self-test without the binary: convert with the pure-Python codec.
            with open(x, "wb") as f:
                f.write(mozlz4.read(orig))
            r1 = r2 = None
        else:
            ctx.cli.require()
            r1 = ctx.cli.decompress(orig, x)
        try:
            with open(x, encoding="utf-8") as f:
                state = json.load(f)
        except ValueError as e:
            raise CheckFailed("decompressed file is not JSON: %s\n%s" % (e, _desc(r1)))
        if state != mozlz4.load_json(orig):
            raise CheckFailed("decompressed JSON differs from the file's content\n" + _desc(r1))
        # Edit: the current entry of the last tab of the first window points elsewhere,
        # proving Firefox restores from the file we compressed.
        edited_url = srv.url("p", 699, "edited=%C3%BC")
        tab = state["windows"][0]["tabs"][-1]
        tab["entries"][tab["index"] - 1]["url"] = edited_url
        tab["entries"][tab["index"] - 1]["title"] = "edited"
        with open(x, "w", encoding="utf-8") as f:
            json.dump(state, f, ensure_ascii=False)
        if ctx.firefox_only:
            with open(x, "rb") as f:
                mozlz4.write(y, f.read())
        else:
            r2 = ctx.cli.compress(x, y)
        try:
            back = mozlz4.load_json(y)
        except Exception as e:  # noqa: BLE001
            raise CheckFailed("compressed file is not valid mozlz4 (%s)\n%s" % (e, _desc(r2)))
        if back != state:
            raise CheckFailed("compressed file does not hold the edited JSON\n" + _desc(r2))
        expected = []
        for w in state["windows"]:
            expected.append(tuple(t["entries"][t["index"] - 1]["url"] for t in w["tabs"]))
        # Install y as the only session file (no backups to fall back to).
        os.remove(ff.sessionstore)
        shutil.rmtree(os.path.join(profile, "sessionstore-backups"), ignore_errors=True)
        shutil.copyfile(y, os.path.join(profile, "sessionstore.jsonlz4"))
    with ctx.firefox(profile_dir=profile, prefs={
            "browser.startup.page": 3,                        # restore previous session
            "browser.sessionstore.restore_on_demand": False,  # really load every tab
            "browser.sessionstore.restore_tabs_lazily": False}) as ff2:
        ff2.start()
        ff2.wait_restored()
        snap = ff2.snapshot()
    got = [tuple(t["url"] for t in w["tabs"]) for w in snap["windows"]]
    soft = Soft()
    soft.eq("Firefox restored windows' URLs (multiset of windows)", sorted(got), sorted(expected),
            "%s ; %s" % (r1.cmd, r2.cmd) if r1 else "pure-Python codec (--firefox-only)")
    pinned = sorted(t["url"] for w in snap["windows"] for t in w["tabs"] if t["pinned"])
    soft.eq("restored pinned tabs", pinned, [w0[2]])
    pend = [t["url"] for w in snap["windows"] for t in w["tabs"] if t["pending"]]
    soft.eq("tabs still pending after restore", pend, [])
    soft.raise_if_any("Firefox did not restore the round-tripped session")
    return ("Firefox restored 2 windows / 10 tabs (1 URL edited) from the compressed file"
            + (" [--firefox-only: harness codec]" if ctx.firefox_only else ""))


def wait_quiet(profile, quiet_s=2.0, timeout=20.0):
    """Wait until Firefox has not changed any session file or prefs.js for quiet_s."""
    end = time.monotonic() + timeout
    last, since = file_hashes(profile), time.monotonic()
    while time.monotonic() < end:
        time.sleep(0.25)
        cur = file_hashes(profile)
        if cur != last:
            last, since = cur, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return cur
    return last


@scenario(7, "restore refused while Firefox runs")
def s7_restore_refused(ctx):
    """With Firefox running on the profile, `ffsession restore ID` (and `latest`) exits 1 with a
    one-line "Firefox is running on this profile" error, and leaves the profile's session files
    and prefs.js byte for byte unchanged (and Firefox's tabs as they were)."""
    srv = ctx.srv
    w0 = [srv.url("p", 990 + i) for i in range(3)]
    with ctx.firefox() as ff:
        ff.start()
        ff.add_tabs(0, w0, replace_first=True)
        ff.flush_and_save()
        ff.flush_and_save()
        if ctx.firefox_only:
            ff.quit()
            return "Firefox side only: nothing to refuse without ffsession"
        ctx.cli.require()
        store = ctx.path("store")
        doc, rb = ctx.cli.backup(ff.profile, store)
        soft = Soft()
        s0 = one_snapshot(soft, doc, RECOVERY, rb)
        soft.eq("backup while running: recovery.jsonlz4 snapshot status", s0.get("status"), "ok", rb.cmd)
        soft.eq("backup while running: recovery.jsonlz4 snapshot tabs", (s0.get("counts") or {}).get("tabs"), 3,
                rb.cmd)
        soft.raise_if_any("backup while Firefox runs")
        # The session moves on, so a restore would really change the files.
        ff.add_tabs(0, [srv.url("p", 995), srv.url("p", 996)])
        ff.flush_and_save()
        snap = ff.snapshot()
        sanity_snapshot(snap, windows=1, tabs=5)
        before = wait_quiet(ff.profile)
        soft = Soft()
        soft.true("HARNESS: the profile has recovery.jsonlz4 and prefs.js",
                  before.get(RECOVERY) and before.get("prefs.js"), repr(before))
        soft.raise_if_any("HARNESS")
        results = []
        for target in (str(s0["id"]), "latest"):
            r = ctx.cli.restore(target, ff.profile, store, expect_ok=False)
            results.append(r)
            lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
            soft.eq("`restore %s` exit code while Firefox runs" % target, r.code, 1, r.cmd)
            soft.true("`restore %s` prints a one-line error on stderr" % target, len(lines) == 1,
                      "stderr: %r" % r.stderr[:500], r.cmd)
            soft.true("`restore %s` error says \"Firefox is running on this profile\"" % target,
                      "Firefox is running on this profile" in r.stderr, "stderr: %r" % r.stderr[:500], r.cmd)
            soft.eq("`restore %s` stdout" % target, r.stdout.strip(), "", r.cmd)
        after = file_hashes(ff.profile)
        cmds = " ; ".join(r.cmd for r in results)
        soft.eq("profile session files and prefs.js (sha256) after the refused restores", after, before, cmds)
        soft.eq("prefs.js resume_session_once lines", pref_lines(os.path.join(ff.profile, "prefs.js"), ONCE), [], cmds)
        soft.true("Firefox still runs", ff.running(), "", cmds)
        snap2 = ff.snapshot()
        soft.eq("Firefox's windows after the refused restores", window_urls(snap2), window_urls(snap), cmds)
        soft.raise_if_any("restore while Firefox runs")
        ff.quit()
    err = results[0].stderr.strip()
    err = err[err.find("Firefox is running"):][:90]
    return ("`restore %s` and `restore latest` exit 1 with \"...%s\"; %d profile files unchanged"
            % (s0["id"], err, sum(1 for v in before.values() if v)))


@scenario(8, "SIGKILL crash leaves recovery.jsonlz4; Firefox resumes it")
def s8_crash(ctx):
    """Kill Firefox by pid (SIGKILL): recovery.jsonlz4 is left, ffsession reads it
    like Firefox saw it, and Firefox itself resumes that tab set on restart."""
    srv = ctx.srv
    w0 = [srv.url("p", 700 + i) for i in range(5)]
    w1 = [srv.url("storage", 710 + i) for i in range(3)]
    since = now_ms()
    with ctx.firefox() as ff:
        ff.start()
        ff.add_tabs(0, w0, replace_first=True)
        ff.new_window(w1)
        ff.select_first_window()
        ff.close_tabs(1, [1])
        ff.flush_and_save()
        snap = ff.snapshot()
        sanity_snapshot(snap, windows=2, tabs=7)
        ff.kill()
        soft = Soft()
        soft.true("recovery.jsonlz4 left after SIGKILL", os.path.exists(ff.recovery))
        soft.true("no sessionstore.jsonlz4 after SIGKILL", not os.path.exists(ff.sessionstore))
        soft.raise_if_any("HARNESS: unexpected files after SIGKILL")
        rec = stable_copy(ff.recovery, ctx.path("crash-recovery.jsonlz4"))
        ff_checks(ctx, rec, snap, since, "recovery.jsonlz4 after SIGKILL")
        profile = ff.profile
    with ctx.firefox(profile_dir=profile) as ff2:     # same profile, default start page
        ff2.start()
        ff2.wait_restored()
        snap2 = ff2.snapshot()
        want = sorted(tuple(ff_tab_url(t) for t in w["tabs"]) for w in snap["windows"])
        got = sorted(tuple(ff_tab_url(t) for t in w["tabs"]) for w in snap2["windows"])
        soft = Soft()
        soft.eq("Firefox resumed the crashed session (windows' URLs)", got, want)
        soft.eq("Firefox recentCrashes after resume", snap2["session"]["recentCrashes"], 1)
        soft.raise_if_any("HARNESS/Firefox: crash resume")
        if not ctx.firefox_only:
            ff2.flush_and_save()
            snap3 = ff2.snapshot()
            rec2 = stable_copy(ff2.recovery, ctx.path("resumed-recovery.jsonlz4"))
            ff_checks(ctx, rec2, snap3, since, "recovery.jsonlz4 after crash resume")
        ff2.quit()
    return "recovery.jsonlz4 after SIGKILL matches; Firefox resumed 2 windows / 7 tabs (recent_crashes=1)"


def install_only(profile, session_file):
    """Make `session_file` the only session file of `profile` (Firefox not
    running on it)."""
    os.remove(os.path.join(profile, "sessionstore.jsonlz4"))
    shutil.rmtree(os.path.join(profile, "sessionstore-backups"), ignore_errors=True)
    shutil.copyfile(session_file, os.path.join(profile, "sessionstore.jsonlz4"))


def reopen_with_only(ctx, profile, session_file):
    """Start Firefox on `profile` with `session_file` as its only session file
    (restoring the previous session); return each window's tab URLs."""
    install_only(profile, session_file)
    with ctx.firefox(profile_dir=profile, prefs={"browser.startup.page": 3}) as ff:
        ff.start()
        ff.wait_restored()
        snap = ff.snapshot()
        ff.quit()
    return [[ff_tab_url(t) for t in w["tabs"]] for w in snap["windows"]]


@scenario(9, "truncated real session file: ffsession refuses it, Firefox silently drops it")
def s9_truncated(ctx):
    """A real sessionstore.jsonlz4 cut in half: `ffsession info/tabs` must exit non-zero
    with a one-line error; Firefox itself starts with one blank tab from it (which is
    why the other scenarios compare tab sets, never just "Firefox started")."""
    srv = ctx.srv
    urls = [srv.url("p", 800 + i) for i in range(4)]
    with ctx.firefox() as ff:
        ff.start()
        ff.add_tabs(0, urls, replace_first=True)
        ff.flush_and_save()
        ff.quit()
        profile = ff.profile
        with open(ff.sessionstore, "rb") as f:
            raw = f.read()
    trunc = ctx.path("truncated.jsonlz4")
    with open(trunc, "wb") as f:
        f.write(raw[: len(raw) // 2])
    soft = Soft()
    if not ctx.firefox_only:
        ctx.cli.require()
        for args in (("info", trunc, "--json"), ("tabs", trunc, "--format", "json")):
            r = ctx.cli.run(*args, expect_ok=False)
            lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
            soft.true("`%s` exits non-zero on a truncated file" % args[0], r.code != 0,
                      "exit %s" % r.code, r.cmd)
            soft.true("`%s` prints a one-line error on stderr" % args[0], len(lines) == 1,
                      "stderr: %r" % r.stderr[:500], r.cmd)
            soft.true("`%s` prints nothing on stdout on error" % args[0], r.stdout.strip() == "",
                      "stdout: %r" % r.stdout[:300], r.cmd)
    got = reopen_with_only(ctx, profile, trunc)
    soft.true("Firefox started from the truncated file with one window and no restored tab",
              len(got) == 1 and len(got[0]) == 1 and not any(u in urls for u in got[0]), repr(got))
    soft.raise_if_any("truncated file")
    return ("%sFirefox silently opened %r" % ("" if ctx.firefox_only else
            "ffsession exits non-zero with a one-line error; ", got[0][0]))


@scenario(10, "rescue: a 500-tab session cut at 60% is rescued and Firefox reopens the rescued tabs")
def s10_rescue(ctx):
    """Firefox writes a 500-tab session; the file is cut at 60% (Firefox itself then
    restores nothing from it); `ffsession rescue` recovers the complete tabs before the
    cut, all original and in order; Firefox reopens exactly the tabs rescue reported."""
    srv = ctx.srv
    u0 = [srv.url("p", 3000 + i) for i in range(300)]
    u1 = [srv.url("p", 4000 + i, "w=2") for i in range(200)]
    with ctx.firefox() as ff:
        ff.start()
        for b in range(0, len(u0), 100):
            ff.add_tabs(0, u0[b:b + 100], replace_first=(b == 0))
        ff.new_window(u1)
        ff.select_first_window()
        ff.flush_and_save()
        sanity_snapshot(ff.snapshot(), windows=2, tabs=500, urls=u0 + u1)
        ff.quit()
        profile = ff.profile
        with open(ff.sessionstore, "rb") as f:
            raw = f.read()
    if ctx.firefox_only:
        raise Skip("needs the ffsession binary")
    ctx.cli.require()
    orig_path = ctx.path("original.jsonlz4")
    with open(orig_path, "wb") as f:
        f.write(raw)
    orig_json = mozlz4.read(orig_path)
    orig_state = json.loads(orig_json)
    original = [[t["entries"][t["index"] - 1]["url"] for t in w["tabs"]]
                for w in orig_state["windows"]]
    trunc = ctx.path("cut.jsonlz4")
    with open(trunc, "wb") as f:
        f.write(raw[: len(raw) * 6 // 10])
    rescued = ctx.path("rescued.jsonlz4")
    r = ctx.cli.run("rescue", trunc, "-o", rescued, "--json")
    report = json.loads(r.stdout)
    soft = Soft()
    tabs = report["tabs"]
    soft.true("rescue reports damage", report["damaged"] is True, r.stdout[:400], r.cmd)
    # Every tab whose JSON lies wholly before the cut, by the original file itself.
    state = mozlz4.load_json(rescued)
    got = [[t["entries"][t["index"] - 1]["url"] for t in w["tabs"]] for w in state["windows"]]
    soft.eq("rescued tab count (file) = reported", sum(map(len, got)), tabs, r.cmd)
    flat_orig = [u for w in original for u in w]
    flat_got = [u for w in got for u in w]
    soft.eq("rescued tabs are the original's first tabs, in order", flat_got, flat_orig[:len(flat_got)])
    # The tabs that end before the readable part ends, found in Firefox's own
    # bytes (it writes compact JSON, as json.dumps below does).
    readable = report["damage"]["json_offset"]
    before, pos = 0, 0
    for w in orig_state["windows"]:
        for t in w["tabs"]:
            own = json.dumps(t, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
            at = orig_json.find(own, pos)
            if at < 0:
                continue
            pos = at + len(own)
            before += pos < readable
    soft.true("found the original tabs' bytes", before > 100, "%d tabs before the cut" % before)
    soft.true("rescue recovered at least 95%% of the %d tabs before the cut" % before,
              len(flat_got) >= 0.95 * before, "%d tabs" % len(flat_got), r.cmd)
    reopened = reopen_with_only(ctx, profile, rescued)
    soft.eq("Firefox reopened exactly the rescued tabs (multiset of windows)",
            sorted(map(tuple, reopened)), sorted(map(tuple, got)))
    soft.raise_if_any("rescue")
    return ("cut at 60%% of %d bytes: rescue recovered %d of the %d tabs wholly before the cut "
            "(of 500; %d windows; readable JSON %s%%); Firefox reopened exactly them" %
            (len(raw), tabs, before, len(got), report["damage"]["json_percent"]))


@scenario(11, "new machine: a store copied from elsewhere restored into a brand-new profile")
def s11_new_machine(ctx):
    """The old machine backs up a 3-window / 50-tab session; its store is copied to an
    "external disk"; on the new machine, with no profile at all, `ffsession --store COPY
    restore latest --profile NEW` creates the profile folder, and Firefox started on it
    (default startup prefs: no restore) reopens exactly those windows and tabs."""
    with ctx.firefox() as ff:
        ff.start()
        build_rich_session(ctx, ff)
        ff.flush_and_save()
        snap = ff.snapshot()
        sanity_snapshot(snap, windows=3, tabs=21 + 14 + 15)
        ff.quit()
        profile = ff.profile
    if ctx.firefox_only:
        raise Skip("needs the ffsession binary")
    ctx.cli.require()
    store = ctx.path("old-machine-store")
    ctx.cli.backup(profile, store)
    copy = ctx.path("external-disk/default-release")
    shutil.copytree(store, copy)
    new_profile = ctx.path("new-machine/profile")
    soft = Soft()
    rl = ctx.cli.run("--store", copy, "list", "--json")
    soft.true("`list` works on the copied store alone", len(json.loads(rl.stdout)) >= 1, rl.stdout[:300], rl.cmd)
    r = ctx.cli.run("--store", copy, "restore", "latest", "--profile", new_profile)
    soft.true("restore created the new profile folder", os.path.isdir(new_profile), "", r.cmd)
    soft.raise_if_any("restore into a new profile")
    with ctx.firefox(profile_dir=new_profile, prefs={"browser.startup.page": 1}) as ff2:
        ff2.start()
        ff2.wait_restored()
        snap2 = ff2.snapshot()
        ff2.quit()
    soft = Soft()
    soft.eq("Firefox on the new profile reopened the old machine's windows (multiset of URL lists)",
            window_urls(snap2), window_urls(snap), r.cmd)
    soft.eq("Firefox on the new profile: pinned/hidden/container/group per tab",
            tab_props(snap2), tab_props(snap), r.cmd)
    soft.raise_if_any("new machine")
    n = sum(len(w["tabs"]) for w in snap["windows"])
    return ("store copied, restored into a brand-new profile folder: Firefox reopened %d windows / %d tabs"
            % (len(snap["windows"]), n))


# Scenarios 12 and 13 (tidy, extract, merge), 14 (rescue and tab groups),
# 15 (tidy's rewriting rules), 16 (an upgrade backup), 17 (a remote store over
# SFTP) and 18 (a new user's Firefox, found with no flag) live in their own files.
from . import scenarios_tidy  # noqa: E402,F401
from . import scenarios_rescue  # noqa: E402,F401
from . import scenarios_tidy_rules  # noqa: E402,F401
from . import scenarios_upgrade  # noqa: E402,F401
from . import scenarios_remote  # noqa: E402,F401
from . import scenarios_home  # noqa: E402,F401
from . import scenarios_ui  # noqa: E402,F401
from . import scenarios_ui_open  # noqa: E402,F401
from . import scenarios_watch  # noqa: E402,F401
from . import scenarios_ui_search  # noqa: E402,F401
