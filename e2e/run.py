#!/usr/bin/env python3
"""ffsession end-to-end suite against a real headless Firefox ESR.

    python3 e2e/run.py [--only 1,2] [--save-fixtures DIR] [--keep] [--firefox-only]

Prints one line per scenario and ends with "N passed, N failed, N skipped";
exits 1 if any scenario failed.  The ffsession binary comes from $FFSESSION_BIN
(default <repo>/target/debug/ffsession).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True   # keep e2e/ free of __pycache__

try:
    import lz4.block  # noqa: F401  python-lz4, for ffe2e/mozlz4.py
except ImportError:
    print("python-lz4 not found: running e2e/install.sh", flush=True)
    subprocess.run(["bash", os.path.join(HERE, "install.sh")], check=True)

from ffe2e import firefox as fxmod  # noqa: E402
from ffe2e import mozlz4  # noqa: E402
from ffe2e.cli import CheckFailed, FFSession, Skip  # noqa: E402
from ffe2e.firefox import Firefox, firefox_version, kill_all_started  # noqa: E402
from ffe2e.pages import PageServer  # noqa: E402
from ffe2e.scenarios import SCENARIOS  # noqa: E402


class ScenarioTimeout(Exception):
    pass


class Ctx:
    def __init__(self, args, srv, cli, root, num, ff_version):
        self.srv = srv
        self.cli = cli
        self.dir = os.path.join(root, "scenario-%s" % num)
        os.makedirs(self.dir, exist_ok=True)
        self.save_fixtures = args.save_fixtures
        self.firefox_only = args.firefox_only
        self.firefox_version = ff_version
        self.fixtures = []

    def path(self, name):
        return os.path.join(self.dir, name)

    def firefox(self, profile_dir=None, prefs=None, desktop_env=None):
        if profile_dir is None:
            profile_dir = tempfile.mkdtemp(prefix="profile-", dir=self.dir)
        return Firefox(profile_dir=profile_dir, prefs=prefs, keep_profile=True,
                       desktop_env=desktop_env)


def ensure_firefox():
    if shutil.which("firefox-esr") or os.environ.get("FIREFOX_BIN"):
        return
    print("firefox-esr not found: running e2e/install.sh", flush=True)
    subprocess.run(["bash", os.path.join(HERE, "install.sh")], check=True)
    fxmod.FIREFOX_BIN = shutil.which("firefox-esr") or fxmod.FIREFOX_BIN


def fixture_report(paths):
    """Privacy check of saved fixtures: report, do not modify."""
    lines = []
    for p in paths:
        try:
            d = mozlz4.load_json(p)
        except Exception as e:  # noqa: BLE001
            lines.append("  %s: cannot decode (%s)" % (os.path.basename(p), e))
            continue
        blob = json.dumps(d, ensure_ascii=False)
        cookies = d.get("cookies")
        if cookies is None:
            ck = "no top-level cookies array"
        else:
            ck = "top-level cookies array PRESENT with %d entr%s" % (len(cookies), "y" if len(cookies) == 1 else "ies")
        hosts = sorted(set(re.findall(r"(?:https?|wss?|ftp)://([^/\"'\\\\:?#]+)", blob)))
        lines.append("  %s: %d bytes; %s; http hosts: %s; formdata: %s"
                     % (os.path.basename(p), os.path.getsize(p), ck, ", ".join(hosts) or "none",
                        "yes (harness-typed test strings)" if '"formdata"' in blob else "no"))
    return lines


def write_fixture_readme(dirpath, shown_path, ff_version, report):
    with open(os.path.join(dirpath, "README.md"), "w", encoding="utf-8") as f:
        f.write("# Real Firefox session files\n\n"
                "Written by `python3 e2e/run.py --save-fixtures %s`\n"
                "with %s on a fresh temporary profile; every page came from a local\n"
                "test server on 127.0.0.1 (its port differs between runs).\n\n"
                "- `s1-*`: scenario 1, 1 window / 3 tabs.\n"
                "- `s2-*`: scenario 2, 3 windows / 50 tabs, back/forward history, pinned,\n"
                "  container (userContextId 1, 2), hidden and grouped tabs (group name\n"
                "  `Grüppe \"Ω\" <&> 🦊`), 3 closed tabs, 1 closed window (5 tabs), typed\n"
                "  form data, sessionStorage, data: favicons.\n"
                "- `*-recovery.jsonlz4`: `sessionstore-backups/recovery.jsonlz4` while Firefox ran;\n"
                "  `*-sessionstore.jsonlz4`: `sessionstore.jsonlz4` after a clean quit.\n"
                "- `*.expected.json`: Firefox's own answer (read over Marionette) at the time the\n"
                "  file was written: counts, each open window's tabs (url, title, pinned, hidden,\n"
                "  container, group, history_len), closed tab URLs per window and closed windows' tab\n"
                "  URLs. Windows may be in a different order than in the file: compare as a set.\n\n"
                "Privacy check at save time:\n\n" % (shown_path, ff_version))
        for line in report:
            f.write("-" + line[1:] + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help="comma-separated scenario numbers to run")
    ap.add_argument("--list", action="store_true", help="list scenarios and exit")
    ap.add_argument("--save-fixtures", metavar="DIR",
                    help="copy the real session files of scenarios 1 and 2 (+ Firefox's answer) to DIR")
    ap.add_argument("--keep", action="store_true", help="keep temp dirs (profiles, logs) of passing scenarios too")
    ap.add_argument("--firefox-only", action="store_true",
                    help="exercise only the Firefox side (no ffsession binary needed)")
    ap.add_argument("--timeout", type=int, default=240, help="per-scenario time limit in seconds (default 240)")
    args = ap.parse_args(argv)

    if args.list:
        for s in SCENARIOS:
            print("%s. %s%s" % (s["num"], s["name"], "  [placeholder: %s]" % s["placeholder"] if s["placeholder"] else ""))
        return 0
    only = None
    if args.only:
        only = {x.strip() for x in args.only.split(",") if x.strip()}
    fixtures_arg = args.save_fixtures
    if args.save_fixtures:
        args.save_fixtures = os.path.abspath(args.save_fixtures)

    ensure_firefox()
    ff_version = firefox_version()
    cli = FFSession()
    print("Firefox: %s (%s)" % (ff_version, fxmod.FIREFOX_BIN))
    print("ffsession: %s%s" % (cli.binary, "" if cli.available() else "  (NOT FOUND)"), flush=True)

    def on_signal(signum, frame):
        kill_all_started()
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, on_signal)

    def on_alarm(signum, frame):
        raise ScenarioTimeout("scenario exceeded %ds" % args.timeout)
    signal.signal(signal.SIGALRM, on_alarm)

    root = tempfile.mkdtemp(prefix="ffsession-e2e-")
    passed = failed = skipped = 0
    fixtures = []
    t_all = time.monotonic()
    try:
        with PageServer() as srv:
            for sc in SCENARIOS:
                num = str(sc["num"])
                if only is not None and num not in only:
                    continue
                label = "%s. %s" % (num, sc["name"])
                if sc["placeholder"]:
                    skipped += 1
                    print("SKIP  %s: %s" % (label, sc["placeholder"]), flush=True)
                    continue
                if not args.firefox_only and not cli.available():
                    failed += 1
                    print("FAIL  %s: ffsession binary not found at %s (build it, set FFSESSION_BIN, "
                          "or use --firefox-only)" % (label, cli.binary), flush=True)
                    continue
                ctx = Ctx(args, srv, cli, root, num, ff_version)
                t0 = time.monotonic()
                status, detail = "PASS", ""
                signal.alarm(args.timeout)
                try:
                    detail = sc["fn"](ctx) or ""
                except Skip as e:
                    status, detail = "SKIP", str(e)
                except CheckFailed as e:
                    status, detail = "FAIL", str(e)
                except Exception as e:  # noqa: BLE001  (harness / Firefox problems)
                    status = "FAIL"
                    detail = "%s: %s\n%s" % (type(e).__name__, e, traceback.format_exc(limit=6))
                finally:
                    signal.alarm(0)
                    kill_all_started()
                dt = time.monotonic() - t0
                if status == "PASS" and args.firefox_only:
                    detail = "[--firefox-only: ffsession not run] " + str(detail)
                fixtures.extend(ctx.fixtures)
                first, _, rest = str(detail).partition("\n")
                print("%s  %s (%.1fs)%s" % (status, label, dt, (": " + first) if first else ""), flush=True)
                if rest:
                    for line in rest.splitlines():
                        print("      " + line)
                if status == "PASS":
                    passed += 1
                elif status == "SKIP":
                    skipped += 1
                else:
                    failed += 1
                    print("      artifacts (profiles, Firefox logs, session files): %s" % ctx.dir, flush=True)
                if status != "FAIL" and not args.keep:
                    shutil.rmtree(ctx.dir, ignore_errors=True)
    finally:
        kill_all_started()
        if not failed and not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    if fixtures:
        rep = fixture_report(fixtures)
        print("fixtures saved to %s:" % args.save_fixtures)
        for line in rep:
            print(line)
        write_fixture_readme(args.save_fixtures, fixtures_arg, ff_version, rep)
    print("total time %.1fs" % (time.monotonic() - t_all))
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
