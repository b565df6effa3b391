"""Scenario 16: a profile Firefox has upgraded holds an upgrade backup, an old
session that `backup` stores last; `restore latest` must still bring back the
current session, not that copy."""

from __future__ import annotations

import os
import re
import shutil
import time

from . import mozlz4
from .checks import Soft
from .cli import CheckFailed, Skip
from .scenarios import (JS_STARTUP, SESSIONSTORE, by_file, file_window_urls, pref_lines,
                        sanity_snapshot, scenario, stable_copy, tab_props, window_urls)

# SessionFile.sys.mjs: the build id of the last upgrade backup. At the first
# session write of a start whose Services.appinfo.platformBuildID differs from
# it, SessionWriter copies the file the session was read from at that start
# (sessionstore.jsonlz4, by then moved to previous.jsonlz4) to
# sessionstore-backups/upgrade.jsonlz4-<platformBuildID>, then sets the pref
# to that build id.
UPGRADE_PREF = "browser.sessionstore.upgradeBackup.latestBuildID"
PREVIOUS = "sessionstore-backups/previous.jsonlz4"

JS_BUILD_ID = "return Services.appinfo.platformBuildID;"


def older_build_id(build_id):
    """The build id of the Firefox the profile ran before the upgrade: the same
    YYYYMMDDhhmmss form, one year earlier."""
    if not re.fullmatch(r"\d{14}", build_id or ""):
        raise CheckFailed("HARNESS: platformBuildID %r is not YYYYMMDDhhmmss" % build_id)
    return "%04d%s" % (int(build_id[:4]) - 1, build_id[4:])


def set_prefs_js(profile, name, value):
    """Set a pref in prefs.js (Firefox not running), the way Firefox keeps it."""
    path = os.path.join(profile, "prefs.js")
    with open(path, encoding="utf-8") as f:
        lines = [ln for ln in f if '"%s"' % name not in ln]
    lines.append('user_pref("%s", "%s");\n' % (name, value))
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(lines)


def upgrade_files(profile):
    d = os.path.join(profile, "sessionstore-backups")
    return sorted(n for n in os.listdir(d) if n.startswith("upgrade.jsonlz4-")) if os.path.isdir(d) else []


def last_update(path):
    return mozlz4.load_json(path)["session"]["lastUpdate"]


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def build_session(ff, urls):
    """Replace the start-up tab by `urls` in the first window and write the file."""
    ff.add_tabs(0, urls, replace_first=True)
    ff.select_first_window()
    ff.flush_and_save()
    snap = ff.snapshot()
    sanity_snapshot(snap, windows=1, tabs=len(urls), urls=urls)
    return snap


@scenario(16, "upgrade backup: a profile Firefox upgraded is backed up (the old upgrade copy "
              "stored last); retention keeps the current sessions, not the copy; "
              "`restore latest` reopens the current session")
def s16_upgrade_backup(ctx):
    """Firefox writes session A (3 tabs) and quits. prefs.js then names an older
    build as the last upgrade, so at the next start Firefox writes
    upgrade.jsonlz4-<build id>, a copy of A, while the session becomes B (10 tabs).
    `backup` stores the upgrade copy with a higher id than B's sessionstore.jsonlz4
    and raises no alarm; after the session became C (5 tabs), `restore latest`
    must choose B by its own time, and Firefox (default startup prefs) reopens
    exactly B's tabs."""
    if ctx.firefox_only:
        raise Skip("needs the ffsession binary")
    ctx.cli.require()
    srv = ctx.srv
    a_urls = [srv.url("p", 6000 + i) for i in range(3)]
    b_urls = [srv.url("p", 6100 + i) for i in range(10)]
    c_urls = [srv.url("p", 6200 + i) for i in range(5)]

    # 1. Session A, written at a clean quit.
    with ctx.firefox() as ff:
        ff.start()
        build_id = ff.chrome(JS_BUILD_ID)
        snap_a = build_session(ff, a_urls)
        pref_a = ff.pref(UPGRADE_PREF)
        ff.quit()
        profile = ff.profile
        a_file = stable_copy(ff.sessionstore, ctx.path("A-sessionstore.jsonlz4"))
        a_mtime_ns = os.stat(ff.sessionstore).st_mtime_ns
    old_build = older_build_id(build_id)
    upgrade_name = "sessionstore-backups/upgrade.jsonlz4-" + build_id
    upgrade = os.path.join(profile, upgrade_name)
    soft = Soft()
    soft.true("HARNESS: no upgrade backup after the first start (Firefox writes none from an "
              "empty start)", not upgrade_files(profile), repr(upgrade_files(profile)))
    soft.true("HARNESS: %s is not the current build after the first start" % UPGRADE_PREF,
              pref_a != build_id, repr(pref_a))
    soft.eq("HARNESS: sessionstore.jsonlz4 holds A", file_window_urls(a_file), window_urls(snap_a))
    soft.raise_if_any("HARNESS: session A")

    # 2. The next start is an upgrade: prefs.js names an older build as the
    # last upgrade, as it does after Firefox ran that build. Firefox copies A
    # to upgrade.jsonlz4-<build id> at its first write; the session becomes B.
    set_prefs_js(profile, UPGRADE_PREF, old_build)
    started_ns = time.time_ns()
    with ctx.firefox(profile_dir=profile) as ff:
        ff.start()
        snap_b = build_session(ff, b_urls)
        end = time.monotonic() + 30
        while ff.pref(UPGRADE_PREF) != build_id and time.monotonic() < end:
            time.sleep(0.25)
        pref_b = ff.pref(UPGRADE_PREF)
        ff.flush_and_save()
        ff.quit()
    b_file = stable_copy(os.path.join(profile, SESSIONSTORE), ctx.path("B-sessionstore.jsonlz4"))
    soft = Soft()
    soft.eq("Firefox set %s to its build id after the upgrade backup" % UPGRADE_PREF, pref_b, build_id)
    soft.eq("prefs.js %s after the quit" % UPGRADE_PREF,
            pref_lines(os.path.join(profile, "prefs.js"), UPGRADE_PREF),
            ['user_pref("%s", "%s");' % (UPGRADE_PREF, build_id)])
    soft.eq("upgrade backups in sessionstore-backups/", upgrade_files(profile),
            ["upgrade.jsonlz4-" + build_id])
    soft.raise_if_any("Firefox wrote no upgrade backup")
    up_file = stable_copy(upgrade, ctx.path("upgrade.jsonlz4-" + build_id))
    a_bytes = read_bytes(a_file)
    up_bytes = read_bytes(up_file)
    lu_a, lu_up, lu_b = last_update(a_file), last_update(up_file), last_update(b_file)
    soft.true("the upgrade backup was written during that Firefox run (after its start, "
              "A's file was written before it)", a_mtime_ns < started_ns <= os.stat(upgrade).st_mtime_ns,
              "A's mtime %d, Firefox started %d, upgrade backup's mtime %d"
              % (a_mtime_ns, started_ns, os.stat(upgrade).st_mtime_ns))
    soft.true("the upgrade backup is A's sessionstore.jsonlz4 byte for byte (Firefox's copy)",
              up_bytes == a_bytes, "%d bytes, A has %d" % (len(up_bytes), len(a_bytes)))
    soft.eq("the upgrade backup's tabs are A's", file_window_urls(up_file), window_urls(snap_a))
    soft.eq("the upgrade backup's session.lastUpdate is A's", lu_up, lu_a)
    soft.eq("sessionstore.jsonlz4 after the quit holds B", file_window_urls(b_file), window_urls(snap_b))
    soft.true("B is newer than the upgrade backup (session.lastUpdate)", lu_b > lu_up,
              "B %r, upgrade backup %r" % (lu_b, lu_up))
    soft.raise_if_any("the upgrade backup is not A's session as Firefox left it")

    # 3. Backup: the upgrade copy gets a higher snapshot id than the current
    # session (so ordering by id would pick A), and no alarm is raised. Every
    # discrepancy from here on is collected, so a run reports them all.
    store = ctx.path("store")
    doc, rb = ctx.cli.backup(profile, store, expect_codes=(0, 3))
    problems = Soft()
    files = by_file(doc["snapshots"])
    problems.eq("backup exit code", rb.code, 0, rb.cmd)
    problems.eq("backup alarm", doc.get("alarm"), None, rb.cmd)
    problems.eq("stored file names", sorted(files, key=str),
                sorted([SESSIONSTORE, PREVIOUS, upgrade_name]), rb.cmd)
    want_lu = {SESSIONSTORE: lu_b, PREVIOUS: lu_a, upgrade_name: lu_a}
    ids = {}
    for name, lu in want_lu.items():
        got = files.get(name) or []
        if len(got) != 1:
            problems.true("exactly one snapshot of %s" % name, False, "got %r" % got, rb.cmd)
            continue
        ids[name] = got[0].get("id")
        problems.eq("%s snapshot status" % name, got[0].get("status"), "ok", rb.cmd)
        problems.eq("%s snapshot last_update_ms" % name, got[0].get("last_update_ms"), lu, rb.cmd)
    if SESSIONSTORE not in ids or upgrade_name not in ids:
        problems.raise_if_any("backup of the upgraded profile")
    if not ids[upgrade_name] > ids[SESSIONSTORE]:
        raise CheckFailed("HARNESS: the upgrade copy got snapshot %s, not above sessionstore.jsonlz4's %s: "
                          "this run cannot tell ordering by time from ordering by id\n%s"
                          % (ids[upgrade_name], ids[SESSIONSTORE], rb.describe()))

    # 4. The session moves on to C; then `restore latest`.
    with ctx.firefox(profile_dir=profile) as ff:
        ff.start()
        snap_c = build_session(ff, c_urls)
        ff.quit()
    soft = Soft()
    soft.eq("HARNESS: sessionstore.jsonlz4 holds C", file_window_urls(os.path.join(profile, SESSIONSTORE)),
            window_urls(snap_c))
    soft.true("HARNESS: Firefox left the upgrade backup as it was (no second upgrade)",
              os.path.exists(upgrade) and read_bytes(upgrade) == up_bytes, repr(upgrade_files(profile)))
    soft.raise_if_any("HARNESS: session C")

    # 5. Retention over the days of backups, in a copy of the store (the
    # store itself is for `restore latest` below, before C is backed up):
    # two more backups (each stores the upgrade copy of A last), then a
    # prune that keeps the newest session of the day and the two newest
    # sessions. Every rule must keep C's snapshots, by session time; none
    # may keep the upgrade copy, which each backup stored last (a rule
    # counting backup time keeps it).
    days = ctx.path("store-days")
    shutil.copytree(store, days)
    for _ in range(2):
        _, rb = ctx.cli.backup(profile, days, expect_codes=(0,))
    rp = ctx.cli.run("prune", "--json", "--dry-run", "--profile", profile, "--store", days,
                     "--keep-last", "2", "--keep-hourly", "0", "--keep-daily", "1",
                     "--keep-weekly", "0", "--keep-monthly", "0", "--keep-yearly", "0")
    plan = ctx.cli._json(rp)
    snaps, _ = ctx.cli.list_snapshots(profile, days)
    listed = {s["id"]: s for s in snaps}
    lu_c = last_update(os.path.join(profile, SESSIONSTORE))
    for d in plan["decisions"]:
        rules = [r["rule"] for r in d["reasons"] if r["rule"] in ("last", "daily")]
        if not rules:
            continue
        snap = listed.get(d["id"], {})
        problems.true("prune keeps #%s by %s: it must be a snapshot of C (lastUpdate %d), not %s "
                      "(lastUpdate %s)" % (d["id"], "/".join(rules), lu_c, snap.get("file_name"),
                                           snap.get("last_update_ms")),
                      snap.get("last_update_ms") == lu_c, rp.cmd)
    daily = [d["id"] for d in plan["decisions"] if any(r["rule"] == "daily" for r in d["reasons"])]
    problems.eq("one snapshot kept as the newest session of the day", len(daily), 1, rp.cmd)
    problems.raise_if_any("retention over days of backups of an upgraded profile")

    r = ctx.cli.restore("latest", profile, store)
    with ctx.firefox(profile_dir=profile, prefs={"browser.startup.page": 1}) as ff:
        ff.start()
        ff.wait_restored()
        diag = ff.chrome(JS_STARTUP)
        snap_r = ff.snapshot()
        ff.quit()
    got = window_urls(snap_r)
    which = {tuple(map(tuple, window_urls(s))): n for n, s in (("A", snap_a), ("B", snap_b), ("C", snap_c))}
    problems.eq("`restore latest`: Firefox reopened session B (windows' URLs; it reopened %s)"
                % which.get(tuple(map(tuple, got)), "none of A, B, C"), got, window_urls(snap_b), r.cmd)
    problems.eq("`restore latest`: pinned/hidden/container/group per tab == B", tab_props(snap_r),
                tab_props(snap_b), r.cmd)
    problems.eq("SessionStartup.sessionType", diag.get("sessionType"), "RESUME", r.cmd)
    problems.raise_if_any("restore latest on a profile with an upgrade backup")
    return ("Firefox wrote upgrade.jsonlz4-%s (A, 3 tabs, lastUpdate %d) at its first write after "
            "the build-id change; backup: upgrade copy #%s > sessionstore.jsonlz4 #%s (B, 10 tabs), "
            "exit 0; the session became C (5 tabs); `restore latest`: Firefox reopened exactly B's "
            "10 tabs" % (build_id, lu_a, ids[upgrade_name], ids[SESSIONSTORE]))
