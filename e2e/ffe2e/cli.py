"""Run the ffsession binary and parse its JSON output.

Every failure raises CheckFailed carrying the exact command line, exit code,
stdout and stderr, so a failing scenario can be reproduced by hand.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time

# The repository's own debug build, wherever the repository is checked out.
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_BIN = os.path.join(REPO_ROOT, "target", "debug", "ffsession")


class CheckFailed(AssertionError):
    pass


class Skip(Exception):
    pass


def ffsession_bin() -> str:
    return os.environ.get("FFSESSION_BIN") or DEFAULT_BIN


def _clip(s: str, n: int = 2000) -> str:
    s = s if isinstance(s, str) else s.decode("utf-8", "replace")
    return s if len(s) <= n else s[:n] + "... [%d more chars]" % (len(s) - n)


class Result:
    def __init__(self, argv, proc, seconds):
        self.argv = argv
        self.code = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.seconds = seconds

    @property
    def cmd(self) -> str:
        return shlex.join(self.argv)

    def describe(self) -> str:
        return ("$ %s\n  exit=%s time=%.3fs\n  stdout: %s\n  stderr: %s"
                % (self.cmd, self.code, self.seconds, _clip(self.stdout), _clip(self.stderr)))


class FFSession:
    def __init__(self, binary=None):
        self.binary = binary or ffsession_bin()
        self.log = []          # every Result, for reports

    def available(self) -> bool:
        return os.path.isfile(self.binary) and os.access(self.binary, os.X_OK)

    def require(self):
        if not self.available():
            raise CheckFailed("ffsession binary not found at %s (set FFSESSION_BIN or build it)"
                              % self.binary)

    def run(self, *args, timeout=120, expect_ok=True) -> Result:
        argv = [self.binary] + [str(a) for a in args]
        t0 = time.monotonic()
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, encoding="utf-8", errors="replace")
        r = Result(argv, proc, time.monotonic() - t0)
        self.log.append(r)
        if expect_ok and r.code != 0:
            raise CheckFailed("ffsession exited %d\n%s" % (r.code, r.describe()))
        return r

    def _json(self, r: Result):
        try:
            return json.loads(r.stdout)
        except ValueError as e:
            raise CheckFailed("output is not valid JSON (%s)\n%s" % (e, r.describe()))

    def info(self, path):
        r = self.run("info", path, "--json")
        obj = self._json(r)
        if not isinstance(obj, dict):
            raise CheckFailed("info --json did not print an object\n" + r.describe())
        return obj, r

    def tabs(self, path, closed=False):
        args = ["tabs", path, "--format", "json"] + (["--closed"] if closed else [])
        r = self.run(*args)
        arr = self._json(r)
        if not isinstance(arr, list):
            raise CheckFailed("tabs --format json did not print an array\n" + r.describe())
        return arr, r

    def decompress(self, src, out):
        return self.run("decompress", src, "-o", out)

    def compress(self, src, out):
        return self.run("compress", src, "-o", out)

    # -- backup store ------------------------------------------------------------
    def _snapshots_doc(self, r, what):
        obj = self._json(r)
        if not isinstance(obj, dict) or not isinstance(obj.get("snapshots"), list):
            raise CheckFailed("%s did not print an object with a \"snapshots\" array\n%s"
                              % (what, r.describe()))
        return obj

    def backup(self, profile, store, expect_codes=(0,)):
        """`backup --json`: returns ({"snapshots": [...], "alarm": ...}, Result).
        Exit codes other than expect_codes raise CheckFailed."""
        r = self.run("backup", "--json", "--profile", profile, "--store", store, expect_ok=False)
        if r.code not in expect_codes:
            raise CheckFailed("ffsession backup exited %d (expected %s)\n%s"
                              % (r.code, " or ".join(map(str, expect_codes)), r.describe()))
        return self._snapshots_doc(r, "backup --json"), r

    def list_snapshots(self, profile, store):
        """`list --json`: returns ([snapshot, ...] newest session first, Result)."""
        r = self.run("list", "--json", "--profile", profile, "--store", store)
        obj = self._json(r)
        if isinstance(obj, dict):
            obj = obj.get("snapshots")
        if not isinstance(obj, list):
            raise CheckFailed("list --json did not print a list of snapshots\n" + r.describe())
        return obj, r

    def restore(self, snapshot, profile, store, dry_run=False, expect_ok=True):
        args = ["restore", snapshot, "--profile", profile, "--store", store]
        if dry_run:
            args.append("--dry-run")
        return self.run(*args, expect_ok=expect_ok)
