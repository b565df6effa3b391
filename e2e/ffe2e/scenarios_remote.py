"""Scenario 17: a profile backed up and copied to a real SFTP server (the sshd
.ci/servers.sh starts on 127.0.0.1); the local store and the profile are
deleted; on a "new machine" (a fresh HOME, so no local copy of the remote)
`restore latest --store sftp://...` brings the session back into a new
profile, and Firefox reopens its windows and tabs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

from .checks import Soft
from .cli import CheckFailed, Result, Skip
from .scenarios import build_rich_session, sanity_snapshot, scenario, tab_props, window_urls


def _run(ctx, home, *args):
    """ffsession with its own HOME and the password in the environment, the
    test `ssh` (its own config, key and known_hosts) first on PATH."""
    env = dict(os.environ)
    env["HOME"] = home
    env["FFSESSION_PASSWORD"] = "e2e remote password"
    env["FFSESSION_TEST_SCRYPT_LOG_N"] = "12"
    env["PATH"] = os.environ["FFSESSION_TEST_SSH_BIN"] + os.pathsep + env.get("PATH", "")
    env.pop("XDG_CACHE_HOME", None)
    argv = [ctx.cli.binary] + [str(a) for a in args]
    import time
    t0 = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=180, env=env,
                          stdin=subprocess.DEVNULL, encoding="utf-8", errors="replace")
    r = Result(argv, proc, time.monotonic() - t0)
    ctx.cli.log.append(r)
    if r.code != 0:
        raise CheckFailed("ffsession exited %d\n%s" % (r.code, r.describe()))
    return r


@scenario(17, "remote: backed up, copied to SFTP, store and profile deleted, restore latest "
              "--store sftp://... into a new profile; Firefox reopens the tabs")
def s17_remote(ctx):
    """A 3-window / 50-tab session is backed up and copied (encrypted) to a real
    sshd on 127.0.0.1; the local store and the profile are deleted; a new machine
    (fresh HOME) runs `restore latest --store sftp://... --profile NEW`, and
    Firefox started on NEW reopens exactly those windows and tabs."""
    if not os.environ.get("FFSESSION_TEST_SFTP"):
        raise Skip("needs the SFTP server of .ci/servers.sh (source it first)")
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
    old_home = ctx.path("old-home")
    os.makedirs(old_home, exist_ok=True)
    store = ctx.path("old-machine-store")
    location = "%s/e2e-%d-%d" % (os.environ["FFSESSION_TEST_SFTP"], os.getpid(), id(ctx))
    _run(ctx, old_home, "--profile", profile, "--store", store, "backup")
    rc = _run(ctx, old_home, "--profile", profile, "--store", store, "copy", "--json",
              "--to", location)
    sent = json.loads(rc.stdout)
    if sent.get("snapshots_sent", 0) < 1:
        raise CheckFailed("copy sent no snapshot\n" + rc.describe())
    # The disk dies: the store, the profile and the old machine's cache go.
    shutil.rmtree(store)
    shutil.rmtree(profile)
    shutil.rmtree(old_home)

    new_home = ctx.path("new-home")
    os.makedirs(new_home, exist_ok=True)
    new_profile = ctx.path("new-machine/profile")
    soft = Soft()
    rl = _run(ctx, new_home, "--store", location, "list", "--json")
    soft.true("`list --store sftp://...` lists the copied snapshots",
              len(json.loads(rl.stdout)) >= 1, rl.stdout[:300], rl.cmd)
    r = _run(ctx, new_home, "--store", location, "restore", "latest", "--profile", new_profile)
    soft.true("restore created the new profile folder", os.path.isdir(new_profile), "", r.cmd)
    soft.raise_if_any("restore from SFTP into a new profile")
    with ctx.firefox(profile_dir=new_profile, prefs={"browser.startup.page": 1}) as ff2:
        ff2.start()
        ff2.wait_restored()
        snap2 = ff2.snapshot()
        ff2.quit()
    soft = Soft()
    soft.eq("Firefox on the new profile reopened the copied windows (multiset of URL lists)",
            window_urls(snap2), window_urls(snap), r.cmd)
    soft.eq("Firefox on the new profile: pinned/hidden/container/group per tab",
            tab_props(snap2), tab_props(snap), r.cmd)
    soft.raise_if_any("remote restore")
    n = sum(len(w["tabs"]) for w in snap["windows"])
    return ("copied to SFTP (%d objects, %d bytes), store and profile deleted, restored from "
            "sftp:// into a new profile: Firefox reopened %d windows / %d tabs"
            % (sent["chunks_sent"] + sent["contents_sent"] + sent["snapshots_sent"],
               sent["bytes_sent"], len(snap["windows"]), n))
