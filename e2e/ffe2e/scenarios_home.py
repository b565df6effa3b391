"""Scenario 18: a new Linux user's Firefox, found with no flag. Firefox ESR
started with a fresh HOME and no -profile makes its own profile: in the XDG
folder (~/.config/mozilla/firefox, Firefox 147 and later), in the legacy
~/.mozilla/firefox when that exists, and there too with MOZ_LEGACY_HOME=1.
In each case `ffsession backup` with no --profile and no --store finds it,
and `restore latest` brings its tabs back in Firefox."""

from __future__ import annotations

import configparser
import os
import subprocess
import time

from .checks import Soft
from .cli import CheckFailed, Result, Skip
from .firefox import FIREFOX_BIN
from .scenarios import sanity_snapshot, scenario, window_urls


def _env(home, legacy_forced):
    env = dict(os.environ)
    env["HOME"] = home
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "MOZ_LEGACY_HOME",
                 "FFSESSION_FIREFOX_DIR", "FFSESSION_STORE"):
        env.pop(name, None)
    if legacy_forced:
        env["MOZ_LEGACY_HOME"] = "1"
    return env


def _ffsession(ctx, env, *args):
    argv = [ctx.cli.binary] + [str(a) for a in args]
    t0 = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=180, env=env,
                          stdin=subprocess.DEVNULL, encoding="utf-8", errors="replace")
    r = Result(argv, proc, time.monotonic() - t0)
    ctx.cli.log.append(r)
    if r.code != 0:
        raise CheckFailed("ffsession exited %d\n%s" % (r.code, r.describe()))
    return r


def _default_profile(root):
    """The default profile folder of root/profiles.ini, as installs.ini says."""
    installs = configparser.ConfigParser()
    installs.read(os.path.join(root, "installs.ini"))
    for section in installs.sections():
        if installs.has_option(section, "Default"):
            return os.path.join(root, installs.get(section, "Default"))
    profiles = configparser.ConfigParser()
    profiles.read(os.path.join(root, "profiles.ini"))
    for section in profiles.sections():
        if section.startswith("Profile") and profiles.get(section, "Default", fallback="") == "1":
            return os.path.join(root, profiles.get(section, "Path"))
    raise CheckFailed("HARNESS: no default profile in %s" % root)


MODES = (
    ("a fresh home", False, False, ".config/mozilla/firefox"),
    ("an existing ~/.mozilla/firefox", True, False, ".mozilla/firefox"),
    ("MOZ_LEGACY_HOME=1", False, True, ".mozilla/firefox"),
)


@scenario(18, "a new user's Firefox: profiles made by Firefox itself in a fresh home (XDG), "
              "the legacy ~/.mozilla, MOZ_LEGACY_HOME=1; backup with no flag finds each, "
              "restore latest reopens its tabs")
def s18_home(ctx):
    if ctx.firefox_only:
        raise Skip("needs the ffsession binary")
    ctx.cli.require()
    notes = []
    for n, (what, legacy_exists, forced, expected) in enumerate(MODES):
        home = ctx.path("home-%d" % n)
        os.makedirs(home)
        if legacy_exists:
            os.makedirs(os.path.join(home, ".mozilla", "firefox"))
        env = _env(home, forced)
        # Firefox's first start with no -profile makes the default profile.
        subprocess.run([FIREFOX_BIN, "--headless", "--screenshot",
                        os.path.join(home, "first.png"), "about:blank"],
                       env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=120)
        root = os.path.join(home, expected)
        other = os.path.join(home, ".mozilla/firefox" if expected.startswith(".config")
                             else ".config/mozilla/firefox")
        soft = Soft()
        soft.true("%s: Firefox made profiles.ini in ~/%s" % (what, expected),
                  os.path.isfile(os.path.join(root, "profiles.ini")), repr(os.listdir(home)))
        soft.true("%s: and not in %s" % (what, other),
                  not os.path.isfile(os.path.join(other, "profiles.ini")), other)
        soft.raise_if_any("HARNESS: where Firefox puts a new profile (%s)" % what)
        profile = _default_profile(root)

        urls = [ctx.srv.url("p", 7000 + 100 * n + i) for i in range(4)]
        later = [ctx.srv.url("p", 7050 + 100 * n + i) for i in range(2)]
        with ctx.firefox(profile_dir=profile) as ff:
            ff.start()
            ff.add_tabs(0, urls, replace_first=True)
            ff.select_first_window()
            ff.flush_and_save()
            snap = ff.snapshot()
            sanity_snapshot(snap, windows=1, tabs=len(urls), urls=urls)
            ff.quit()
        # No --profile, no --store: ffsession finds Firefox's own choice.
        _ffsession(ctx, env, "backup")
        listed = _ffsession(ctx, env, "profiles", "--json")
        if os.path.realpath(profile) not in listed.stdout and profile not in listed.stdout:
            raise CheckFailed("%s: `ffsession profiles` does not list %s\n%s"
                              % (what, profile, listed.describe()))
        # The session moves on, not backed up; then restore latest.
        with ctx.firefox(profile_dir=profile) as ff:
            ff.start()
            ff.add_tabs(0, later, replace_first=True)
            ff.flush_and_save()
            ff.quit()
        rr = _ffsession(ctx, env, "restore", "latest")
        with ctx.firefox(profile_dir=profile, prefs={"browser.startup.page": 1}) as ff:
            ff.start()
            ff.wait_restored()
            got = ff.snapshot()
            ff.quit()
        soft = Soft()
        soft.eq("%s: Firefox reopened the session backed up with no flag" % what,
                window_urls(got), window_urls(snap), rr.cmd)
        soft.raise_if_any("restore latest (%s)" % what)
        notes.append("%s: ~/%s" % (what, expected))
    return "found with no flag, backed up and restored: " + "; ".join(notes)
