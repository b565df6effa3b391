#!/usr/bin/env python3
"""Which file operations make the NEXT Firefox start reopen a given session
snapshot, whatever `browser.startup.page` says?  (Decides how
`ffsession restore SNAPSHOT` works.)  See RESTORE.md next to this file.

    python3 e2e/experiments/restore_probe.py [--keep] [--only A,B,...] [--json OUT]

Builds a snapshot (2 windows, 5 tabs, 1 pinned) in one profile and a "user
profile" with a different current session in another, then for every case
copies the user profile, applies the case's file operations with Firefox NOT
running, starts Firefox (headless, Marionette) with browser.startup.page set
explicitly for the case, and asks Firefox what it opened.  user.js never holds
browser.sessionstore.resume_session_once (except in case D1, which tests that).
One Firefox at a time; about 2-3 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
E2E = os.path.dirname(HERE)
sys.path.insert(0, E2E)
sys.dont_write_bytecode = True   # keep e2e/ free of __pycache__

from ffe2e import mozlz4  # noqa: E402
from ffe2e.checks import ff_tab_url  # noqa: E402
from ffe2e.cli import FFSession  # noqa: E402
from ffe2e.firefox import JS_PRELUDE, Firefox, firefox_version, kill_all_started  # noqa: E402
from ffe2e.pages import PageServer  # noqa: E402

ONCE = "browser.sessionstore.resume_session_once"
OS_RESTART = "browser.sessionstore.resuming_after_os_restart"
HOURS = 3600 * 1000

# What SessionStartup decided, read back from Firefox after start-up.
JS_DIAG = JS_PRELUDE + r"""
const { SessionStartup } = ChromeUtils.importESModule("resource:///modules/sessionstore/SessionStartup.sys.mjs");
await SessionStartup.onceInitialized;
const names = {0: "NO_SESSION", 1: "RECOVER", 2: "RESUME", 3: "DEFER"};
return {
  sessionType: names[SessionStartup.sessionType] || String(SessionStartup.sessionType),
  previousSessionCrashed: SessionStartup.previousSessionCrashed,
  once: Services.prefs.getBoolPref("browser.sessionstore.resume_session_once"),
  onceUserSet: Services.prefs.prefHasUserValue("browser.sessionstore.resume_session_once"),
  canRestoreLastSession: SessionStore.canRestoreLastSession,
};
"""


# ---------------------------------------------------------------------------
# profile file operations (what `ffsession restore` could do)
# ---------------------------------------------------------------------------

def backups_dir(prof):
    return os.path.join(prof, "sessionstore-backups")


def install_clean(prof, src):
    """Atomically put src in place as <profile>/sessionstore.jsonlz4."""
    dst = os.path.join(prof, "sessionstore.jsonlz4")
    tmp = dst + ".ffsession-tmp"
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


def install_recovery(prof, src):
    os.makedirs(backups_dir(prof), exist_ok=True)
    shutil.copyfile(src, os.path.join(backups_dir(prof), "recovery.jsonlz4"))


def remove_recovery(prof):
    for n in ("recovery.jsonlz4", "recovery.baklz4", "recovery.jsonlz4.tmp"):
        try:
            os.remove(os.path.join(backups_dir(prof), n))
        except FileNotFoundError:
            pass


def remove_clean(prof):
    try:
        os.remove(os.path.join(prof, "sessionstore.jsonlz4"))
    except FileNotFoundError:
        pass


def remove_checkpoints(prof):
    try:
        os.remove(os.path.join(prof, "sessionCheckpoints.json"))
    except FileNotFoundError:
        pass


def set_prefs_js(prof, name, value):
    """Replace/append one user_pref line in prefs.js (Firefox must not be running)."""
    path = os.path.join(prof, "prefs.js")
    lines = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            lines = [ln for ln in f.read().splitlines(True) if '"%s"' % name not in ln]
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    lines.append("user_pref(%s, %s);\n" % (json.dumps(name), json.dumps(value)))
    tmp = path + ".ffsession-tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.writelines(lines)
    os.replace(tmp, path)


def drop_prefs_js(prof, name):
    """Remove every user_pref line of one pref from prefs.js (back to its default)."""
    path = os.path.join(prof, "prefs.js")
    if not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = [ln for ln in text.splitlines(True) if '"%s"' % name not in ln]
    if "".join(lines) != text:
        tmp = path + ".ffsession-tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.writelines(lines)
        os.replace(tmp, path)


def restore_recipe(prof, snapshot, backup_dir):
    """The recommended `ffsession restore` steps (see RESTORE.md), Firefox NOT running:
    1. back up every session file Firefox could load, and prefs.js;
    2. move recovery.jsonlz4 / recovery.baklz4 / previous.jsonlz4 out of the profile
       (a valid sessionstore.jsonlz4 wins anyway; this only stops a silent fallback
       to another session and keeps them safe, previous.jsonlz4 would be overwritten);
    3. install the snapshot as sessionstore.jsonlz4 (copy to a temp name, rename);
    4. prefs.js: resume_session_once=true, and drop resuming_after_os_restart."""
    os.makedirs(backup_dir, exist_ok=True)
    for rel in ("sessionstore.jsonlz4", "prefs.js"):
        src = os.path.join(prof, rel)
        if os.path.exists(src):
            shutil.copy2(src, os.path.join(backup_dir, rel.replace("/", "_")))
    for n in ("recovery.jsonlz4", "recovery.baklz4", "previous.jsonlz4"):
        src = os.path.join(backups_dir(prof), n)
        if os.path.exists(src):
            shutil.move(src, os.path.join(backup_dir, n))
    install_clean(prof, snapshot)
    drop_prefs_js(prof, OS_RESTART)
    set_prefs_js(prof, ONCE, True)


def prefs_js_line(prof, name):
    try:
        with open(os.path.join(prof, "prefs.js"), encoding="utf-8") as f:
            for ln in f:
                if '"%s"' % name in ln:
                    return ln.strip()
    except FileNotFoundError:
        return "(no prefs.js)"
    return None


def same_file(a, b):
    try:
        with open(a, "rb") as fa, open(b, "rb") as fb:
            return fa.read() == fb.read()
    except FileNotFoundError:
        return False


def listing(prof):
    out = sorted(n for n in os.listdir(prof) if n.startswith(("sessionstore", "sessionCheckpoints", "lock")))
    if os.path.isdir(backups_dir(prof)):
        out += ["sessionstore-backups/" + n for n in sorted(os.listdir(backups_dir(prof)))]
    return out


def parentlock_busy(prof):
    """True if another process holds the fcntl lock on .parentlock (Firefox running)."""
    import fcntl
    path = os.path.join(prof, ".parentlock")
    if not os.path.exists(path):
        return False
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.lockf(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def lock_state(prof):
    p = os.path.join(prof, "lock")
    if os.path.islink(p):
        return "lock -> %s" % os.readlink(p)
    return "no lock" if not os.path.exists(p) else "lock (regular file)"


# ---------------------------------------------------------------------------
# session JSON helpers
# ---------------------------------------------------------------------------

def expected_windows(state):
    """Per-window list of (url at index, pinned) from a session JSON."""
    out = []
    for w in state["windows"]:
        tabs = []
        for t in w["tabs"]:
            en = t.get("entries") or []
            i = max(1, min(len(en), t.get("index") or len(en)))
            tabs.append((en[i - 1]["url"] if en else None, bool(t.get("pinned"))))
        out.append(tuple(tabs))
    return out


def got_windows(snap):
    return [tuple((ff_tab_url(t), bool(t["pinned"])) for t in w["tabs"]) for w in snap["windows"]]


class Codec:
    """decompress/edit/compress a session file with ffsession (pure-Python fallback)."""

    def __init__(self, work):
        self.cli = FFSession()
        self.work = work
        self.used = "ffsession" if self.cli.available() else "harness mozlz4.py (no ffsession binary)"

    def load(self, path):
        if self.cli.available():
            out = os.path.join(self.work, "tmp-decompressed.json")
            self.cli.decompress(path, out)
            with open(out, encoding="utf-8") as f:
                return json.load(f)
        return mozlz4.load_json(path)

    def save(self, state, path):
        raw = os.path.join(self.work, "tmp-edited.json")
        with open(raw, "w", encoding="utf-8") as f:
            json.dump(state, f, ensure_ascii=False)
        if self.cli.available():
            self.cli.compress(raw, path)
        else:
            with open(raw, "rb") as f:
                mozlz4.write(path, f.read())
        if mozlz4.load_json(path) != state:
            raise RuntimeError("compressed file does not hold the edited JSON: " + path)
        return path

    def variant(self, src, dst, **session_fields):
        state = self.load(src)
        sess = state.setdefault("session", {})
        for k, v in session_fields.items():
            if v is None:
                sess.pop(k, None)
            else:
                sess[k] = v
        return self.save(state, dst)


# ---------------------------------------------------------------------------
# the probe
# ---------------------------------------------------------------------------

class Probe:
    def __init__(self, args):
        self.args = args
        self.work = tempfile.mkdtemp(prefix="ffsession-restore-probe-")
        self.srv = PageServer()
        self.codec = Codec(self.work)
        self.rows = []
        self.notes = []

    def path(self, *p):
        return os.path.join(self.work, *p)

    def url(self, n):
        return self.srv.url("p", n)

    def short(self, u):
        if u is None:
            return "None"
        pre = "http://127.0.0.1:%d/p/" % self.srv.port
        if u.startswith(pre):
            return "p" + u[len(pre):]
        return {"chrome://browser/content/blanktab.html": "blank"}.get(u, u)

    def fmt_windows(self, wins):
        return " | ".join(",".join(self.short(u) + ("*" if pin else "") for u, pin in w)
                          for w in sorted(wins))

    # -- build the snapshot and the user's profile ---------------------------
    def build(self):
        # 1. The snapshot: 2 windows, 5 tabs, one pinned, clean quit.
        ff = Firefox(profile_dir=tempfile.mkdtemp(prefix="snap-profile-", dir=self.work),
                     keep_profile=True)
        try:
            ff.start()
            ff.add_tabs(0, [self.url(1), self.url(2), self.url(3)], replace_first=True)
            ff.pin(0, 0)
            ff.new_window([self.url(4), self.url(5)])
            ff.select_first_window()
            ff.flush_and_save()
            ff.quit()
        finally:
            ff.cleanup()
        self.snap_raw = shutil.copyfile(ff.sessionstore, self.path("snapshot-raw.jsonlz4"))
        raw = self.codec.load(self.snap_raw)
        self.expected = expected_windows(raw)
        self.notes.append("snapshot (clean quit) session fields: %s" % json.dumps(raw.get("session")))
        now = int(time.time() * 1000)
        # Realistic snapshot: taken two days ago (a clean-quit file, state "stop").
        self.snap_old = self.codec.variant(self.snap_raw, self.path("snapshot-old.jsonlz4"),
                                           lastUpdate=now - 48 * HOURS)
        self.snap_run_old = self.codec.variant(self.snap_raw, self.path("snapshot-running-old.jsonlz4"),
                                               state="running", lastUpdate=now - 48 * HOURS,
                                               recentCrashes=0)
        self.snap_run_fresh = self.codec.variant(self.snap_raw, self.path("snapshot-running-fresh.jsonlz4"),
                                                 state="running", lastUpdate=now, recentCrashes=0)
        self.snap_nostate_fresh = self.codec.variant(self.snap_raw, self.path("snapshot-fresh.jsonlz4"),
                                                     lastUpdate=now)
        self.snap_stop_fresh = self.codec.variant(self.snap_raw, self.path("snapshot-stop-fresh.jsonlz4"),
                                                  state="stop", lastUpdate=now)
        self.snap_run_fresh_rc1 = self.codec.variant(self.snap_raw,
                                                     self.path("snapshot-running-fresh-rc1.jsonlz4"),
                                                     state="running", lastUpdate=now, recentCrashes=1)

        # 2. The user's profile: two sessions of its own (page=1), clean quits.
        tpl = tempfile.mkdtemp(prefix="user-profile-", dir=self.work)
        ff = Firefox(profile_dir=tpl, keep_profile=True)
        try:
            ff.start()
            self.notes.append("while Firefox runs: %s (Firefox pid %d); .parentlock fcntl-locked by "
                              "another process: %s" % (lock_state(tpl), ff.pid, parentlock_busy(tpl)))
            ff.add_tabs(0, [self.url(50), self.url(51)], replace_first=True)
            ff.flush_and_save()
            ff.quit()
            self.notes.append("after a clean quit: %s; .parentlock fcntl-locked: %s; files: %s"
                              % (lock_state(tpl), parentlock_busy(tpl), listing(tpl)))
            ff.start()
            ff.add_tabs(0, [self.url(52), self.url(53)], replace_first=True)
            ff.flush_and_save()
            ff.quit()
        finally:
            ff.cleanup()
        self.template = tpl
        self.current = expected_windows(mozlz4.load_json(os.path.join(tpl, "sessionstore.jsonlz4")))
        with open(os.path.join(tpl, "sessionCheckpoints.json")) as f:
            self.notes.append("user profile sessionCheckpoints.json: %s" % f.read().strip())
        self.notes.append("user profile files before each case: %s" % listing(tpl))
        self.notes.append("user profile prefs.js resume_session_once line: %s" % prefs_js_line(tpl, ONCE))
        print("snapshot windows:      %s" % self.fmt_windows(self.expected), flush=True)
        print("user's current session: %s" % self.fmt_windows(self.current), flush=True)

    # -- one Firefox start on a prepared profile -----------------------------
    def start_and_look(self, prof, page, userjs=None, quit=True):
        prefs = {"browser.startup.page": page}
        prefs.update(userjs or {})
        ff = Firefox(profile_dir=prof, prefs=prefs, keep_profile=True)
        try:
            ff.start()
            snap = ff.snapshot()
            diag = ff.chrome(JS_DIAG)
            time.sleep(2)   # does Firefox save prefs.js soon after clearing the pref?
            diag["prefs_js_once_while_running"] = prefs_js_line(prof, ONCE)
            if quit:
                ff.quit()
            else:
                ff.kill()
        finally:
            ff.kill()
        wins = got_windows(snap)
        urls = [u for w in wins for u, _ in w]
        if "about:sessionrestore" in urls:
            verdict = "NO: about:sessionrestore"
        elif sorted(wins) == sorted(self.expected):
            verdict = "YES exact"
        elif sorted(wins) == sorted(self.current):
            verdict = "no: user's current session"
        else:
            verdict = "no: " + self.fmt_windows(wins)
        return {"verdict": verdict, "windows": self.fmt_windows(wins), "diag": diag,
                "recentCrashes": snap["session"]["recentCrashes"]}

    def run_case(self, cid, desc, page, prepare, userjs=None, second=False, installed=None):
        prof = self.path("case-%s-page%d" % (cid, page))
        shutil.copytree(self.template, prof, symlinks=True)
        prepare(prof)
        before = prefs_js_line(prof, ONCE)
        installed_copy = None
        if installed:
            installed_copy = self.path("case-%s-page%d.installed.jsonlz4" % (cid, page))
            shutil.copyfile(installed, installed_copy)
        t0 = time.monotonic()
        first = self.start_and_look(prof, page, userjs)
        row = {"case": cid, "desc": desc, "page": page, "restored": first["verdict"],
               "type": first["diag"]["sessionType"],
               "crashed": first["diag"]["previousSessionCrashed"],
               "once_after_start": first["diag"]["once"],
               "once_user_set_after_start": first["diag"]["onceUserSet"],
               "prefs_js_once_before_start": before,
               "prefs_js_once_while_running": first["diag"]["prefs_js_once_while_running"],
               "prefs_js_once_after_quit": prefs_js_line(prof, ONCE),
               "recentCrashes": first["recentCrashes"], "windows": first["windows"],
               "canRestoreLastSession": first["diag"]["canRestoreLastSession"],
               "files_after_quit": listing(prof)}
        if installed_copy:
            row["installed_now_previous"] = same_file(
                installed_copy, os.path.join(backups_dir(prof), "previous.jsonlz4"))
        if second:
            nxt = self.start_and_look(prof, page, userjs)
            row["second_start"] = nxt["verdict"] + " [%s]" % nxt["diag"]["sessionType"]
        row["seconds"] = round(time.monotonic() - t0, 1)
        self.add(row)

    def add(self, row):
        self.rows.append(row)
        print("  %-3s page=%d  %-28s type=%-7s once->%s  %s" % (
            row["case"], row["page"], row["restored"][:60], row.get("type"), row.get("once_after_start"),
            ("2nd start: " + row["second_start"]) if row.get("second_start") else ""), flush=True)

    # -- the cases -------------------------------------------------------------
    def cases(self):
        S = self

        def a(prof, snap=None):
            restore_recipe(prof, snap or S.snap_old, prof + ".ffsession-backup")

        def b(prof):
            install_clean(prof, S.snap_old)
            remove_recovery(prof)

        def c(snap, keep_checkpoints):
            def prep(prof):
                install_clean(prof, snap)
                remove_recovery(prof)
                if not keep_checkpoints:
                    remove_checkpoints(prof)
            return prep

        def a2(prof):
            a(prof, S.snap_run_old)
            remove_checkpoints(prof)

        def d2(prof):
            a(prof)
            set_prefs_js(prof, OS_RESTART, True)

        def d3(prof):
            # a stale recovery.jsonlz4 of another session (the user's current one) left in place
            a(prof)
            install_recovery(prof, os.path.join(prof + ".ffsession-backup", "sessionstore.jsonlz4"))

        def d4(prof):
            remove_clean(prof)
            remove_recovery(prof)
            install_recovery(prof, S.snap_old)
            set_prefs_js(prof, ONCE, True)

        return [
            ("A", "recipe: clean=snapshot, recovery*+previous moved out, prefs.js resume_session_once=true", a,
             {"pages": (0, 1, 3), "second": True, "installed": S.snap_old}),
            ("B", "clean=snapshot, recovery* removed, no pref", b,
             {"pages": (0, 1, 3), "installed": S.snap_old}),
            ("C1", "B + snapshot session.state=running (48h old), sessionCheckpoints.json kept",
             c(S.snap_run_old, True), {"pages": (1,)}),
            ("C2", "B + state=running, checkpoints removed, lastUpdate=now, recentCrashes=0",
             c(S.snap_run_fresh, False), {"pages": (1,), "second": True}),
            ("C3", "B + state=running, checkpoints removed, lastUpdate 48h old",
             c(S.snap_run_old, False), {"pages": (1, 3)}),
            ("C4", "B + state=running, checkpoints removed, lastUpdate=now, recentCrashes=1",
             c(S.snap_run_fresh_rc1, False), {"pages": (1,)}),
            ("C5", "B + no session.state field (as Firefox writes it), checkpoints removed, lastUpdate=now",
             c(S.snap_nostate_fresh, False), {"pages": (1,)}),
            ("C6", "B + session.state=stop, checkpoints removed, lastUpdate=now",
             c(S.snap_stop_fresh, False), {"pages": (1,)}),
            ("A2", "A + snapshot state=running (48h old) + checkpoints removed", a2,
             {"pages": (1,)}),
            ("A3", "A, user has resume_from_crash=false", a,
             {"pages": (1,), "userjs": {"browser.sessionstore.resume_from_crash": False}}),
            ("D1", "B + resume_session_once=true in user.js (not prefs.js)", b,
             {"pages": (1,), "second": True, "userjs": {ONCE: True}}),
            ("D2", "A + leftover prefs.js resuming_after_os_restart=true", d2, {"pages": (1,)}),
            ("D3", "A + recovery.jsonlz4 = the user's current session put back (stale file left)", d3,
             {"pages": (1,)}),
            ("D4", "snapshot as recovery.jsonlz4 only (no clean file) + prefs.js pref", d4,
             {"pages": (1,)}),
        ]

    def case_running(self):
        """R1: the same operations as A (restore_recipe), done while Firefox is running, then a clean quit."""
        prof = self.path("case-R1-page1")
        shutil.copytree(self.template, prof, symlinks=True)
        ff = Firefox(profile_dir=prof, prefs={"browser.startup.page": 1}, keep_profile=True)
        t0 = time.monotonic()
        try:
            ff.start()
            restore_recipe(prof, self.snap_old, prof + ".ffsession-backup")
            edited = prefs_js_line(prof, ONCE)
            ff.quit()
        finally:
            ff.kill()
        kept_file = same_file(self.snap_old, os.path.join(prof, "sessionstore.jsonlz4"))
        kept_pref = prefs_js_line(prof, ONCE)
        nxt = self.start_and_look(prof, 1, quit=False)     # ends with SIGKILL: look at the lock
        self.add({"case": "R1", "page": 1,
                  "desc": "A's operations done WHILE Firefox runs, then clean quit, then start",
                  "restored": nxt["verdict"], "type": nxt["diag"]["sessionType"],
                  "crashed": nxt["diag"]["previousSessionCrashed"],
                  "once_after_start": nxt["diag"]["once"],
                  "snapshot_file_survived_quit": kept_file,
                  "prefs_js_once_before_start": edited,
                  "prefs_js_once_after_quit": kept_pref,
                  "lock_after_sigkill": lock_state(prof),
                  "files_after_quit": listing(prof), "windows": nxt["windows"],
                  "seconds": round(time.monotonic() - t0, 1)})

    def case_locked(self):
        """L1: while ffsession holds the fcntl lock on .parentlock (as it could during a
        restore), a Firefox started on that profile must refuse to use it."""
        import fcntl
        import signal
        from ffe2e import firefox as fxmod
        prof = self.path("case-L1")
        shutil.copytree(self.template, prof, symlinks=True)
        before = listing(prof)
        fd = os.open(os.path.join(prof, ".parentlock"), os.O_RDWR | os.O_CREAT, 0o644)
        t0 = time.monotonic()
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            env = dict(os.environ, MOZ_HEADLESS="1", MOZ_CRASHREPORTER_DISABLE="1",
                       MOZ_DISABLE_AUTO_SAFE_MODE="1")
            proc = subprocess.Popen([fxmod.FIREFOX_BIN, "--headless", "--no-remote", "-profile", prof],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, start_new_session=True, env=env)
            try:
                out, _ = proc.communicate(timeout=45)
                outcome = "Firefox exited %d: %s" % (proc.returncode, " ".join(
                    ln for ln in out.decode("utf-8", "replace").splitlines() if "already running" in ln)[:110])
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
                outcome = "Firefox still running after 45 s (killed)"
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        finally:
            os.close(fd)
        self.add({"case": "L1", "page": 1, "restored": outcome,
                  "desc": "Firefox started while another process holds the fcntl lock on .parentlock",
                  "files_unchanged": listing(prof) == before, "files_after_quit": listing(prof),
                  "seconds": round(time.monotonic() - t0, 1)})

    def run(self):
        only = set(self.args.only.split(",")) if self.args.only else None
        print("Firefox: %s; codec: %s; workdir: %s" % (firefox_version(), self.codec.used, self.work),
              flush=True)
        with self.srv:
            self.build()
            for cid, desc, prep, opt in self.cases():
                if only and cid not in only:
                    continue
                for page in opt["pages"]:
                    try:
                        self.run_case(cid, desc, page, prep, userjs=opt.get("userjs"),
                                      second=opt.get("second", False) and page != 3,
                                      installed=opt.get("installed"))
                    except Exception as e:  # noqa: BLE001
                        kill_all_started()
                        traceback.print_exc()
                        self.add({"case": cid, "desc": desc, "page": page,
                                  "restored": "ERROR %s" % str(e).splitlines()[0][:80]})
            if not only or "L1" in only:
                try:
                    self.case_locked()
                except Exception as e:  # noqa: BLE001
                    traceback.print_exc()
                    self.add({"case": "L1", "desc": "locked", "page": 1, "restored": "ERROR %s" % e})
            if not only or "R1" in only:
                try:
                    self.case_running()
                except Exception as e:  # noqa: BLE001
                    kill_all_started()
                    traceback.print_exc()
                    self.add({"case": "R1", "desc": "while running", "page": 1,
                              "restored": "ERROR %s" % e})

    def report(self):
        print()
        print("Notes:")
        for n in self.notes:
            print("  - " + n)
        print()
        hdr = ("case", "page", "restored exactly?", "SessionStartup", "crashed?", "once pref after start",
               "prefs.js once: before start", "2 s after start", "after quit", "snapshot -> previous.jsonlz4", "2nd start (same page)")
        def pl(r, key):
            if key not in r:
                return ""
            v = r[key]
            if v is None:
                return "absent"
            return "true" if "true)" in v else ("false" if "false)" in v else v)

        rows = []
        for r in self.rows:
            rows.append((r["case"], str(r["page"]), r["restored"], str(r.get("type", "")),
                         str(r.get("crashed", "")), str(r.get("once_after_start", "")),
                         pl(r, "prefs_js_once_before_start"), pl(r, "prefs_js_once_while_running"),
                         pl(r, "prefs_js_once_after_quit"),
                         str(r.get("installed_now_previous", "")), r.get("second_start", "")))
        widths = [min(60, max(len(h), *(len(x[i]) for x in rows))) for i, h in enumerate(hdr)]
        line = lambda cells: "| " + " | ".join(c[:w].ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
        print(line(hdr))
        print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
        for x in rows:
            print(line(x))
        print()
        print("Cases:")
        seen = set()
        for r in self.rows:
            if r["case"] not in seen:
                seen.add(r["case"])
                print("  %-3s %s" % (r["case"], r["desc"]))
        for r in self.rows:
            extra = {k: v for k, v in r.items() if k in ("snapshot_file_survived_quit", "lock_after_sigkill", "files_unchanged",
                                                          "once_user_set_after_start",
                                                          "files_after_quit", "recentCrashes", "windows",
                                                          "canRestoreLastSession")}
            if r["case"] in ("A", "B", "D4", "R1", "L1") and extra:
                print("  %s page=%d: %s" % (r["case"], r["page"], json.dumps(extra)))
        if self.args.json:
            with open(self.args.json, "w", encoding="utf-8") as f:
                json.dump({"notes": self.notes, "rows": self.rows}, f, indent=1)
        if self.args.keep:
            print("kept: %s" % self.work)
        else:
            shutil.rmtree(self.work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", action="store_true", help="keep the temp profiles")
    ap.add_argument("--only", help="comma-separated case ids (A,B,C1,C2,C3,C4,C5,C6,A2,A3,D1,D2,D3,D4,L1,R1)")
    ap.add_argument("--json", help="also write the rows as JSON to this file")
    args = ap.parse_args()
    if not shutil.which("firefox-esr") and not os.environ.get("FIREFOX_BIN"):
        subprocess.run(["bash", os.path.join(E2E, "install.sh")], check=True)
    p = Probe(args)
    try:
        p.run()
    finally:
        kill_all_started()
    p.report()
    return 0 if all(not r["restored"].startswith("ERROR") for r in p.rows) else 1


if __name__ == "__main__":
    sys.exit(main())
