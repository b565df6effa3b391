"""Start/stop a headless Firefox ESR on a temp profile and script it over Marionette.

Every Firefox process is started by this module with start_new_session=True,
so its process-group id equals its pid; it is only ever stopped through that
pid (Marionette:Quit for a clean quit, SIGKILL to the pid for a crash, then
SIGKILL to the pid's own process group to reap leftover content processes).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from .marionette import Marionette, MarionetteError

FIREFOX_BIN = os.environ.get("FIREFOX_BIN") or shutil.which("firefox-esr") or shutil.which("firefox") or "firefox-esr"

# Prefs written to user.js.  user.js values count as user-set, so Marionette's
# "recommended preferences" (which only apply to prefs without a user value)
# do not override them.
BASE_PREFS = {
    # --- session store: restore after crash, write often ---------------------
    # Marionette's recommended prefs set this to false; real users have true.
    "browser.sessionstore.resume_from_crash": True,
    # Minimal time between two writes while "active" (default 15000 ms).
    "browser.sessionstore.interval": 1000,
    # Automation never sends user input, so Firefox soon considers the user
    # idle and then writes only once per interval.idle (default 1 h).
    "browser.sessionstore.interval.idle": 1000,
    "browser.sessionstore.idleDelay": 3600,   # seconds before "idle"
    # Start page: 1 = home page (Firefox default; no restore after a clean
    # quit).  Scenario 6 uses 3 = restore previous session.
    "browser.startup.page": 1,
    "browser.startup.homepage": "about:blank",
    "browser.startup.couldRestoreSession.count": -1,
    "browser.sessionstore.max_resumed_crashes": 1,
    # Do not ask to continue after crashes / go to safe mode.
    "toolkit.startup.max_resumed_crashes": -1,
    "browser.tabs.warnOnClose": False,
    "browser.tabs.warnOnCloseOtherTabs": False,
    "browser.tabs.warnOnOpen": False,
    "browser.warnOnQuit": False,
    "browser.tabs.unloadOnLowMemory": False,
    "browser.pagethumbnails.capturing_disabled": True,
    "privacy.userContext.enabled": True,         # container tabs
    # --- first-run / default-browser noise --------------------------------
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.homepage_override.mstone": "ignore",
    "startup.homepage_welcome_url": "about:blank",
    "startup.homepage_welcome_url.additional": "",
    "startup.homepage_override_url": "",
    "browser.aboutwelcome.enabled": False,
    "trailhead.firstrun.didSeeAboutWelcome": True,
    "browser.newtabpage.enabled": False,
    "browser.newtab.preload": False,
    "browser.newtabpage.activity-stream.feeds.system.topstories": False,
    "browser.newtabpage.activity-stream.feeds.section.topstories": False,
    "browser.newtabpage.activity-stream.feeds.topsites": False,
    "browser.newtabpage.activity-stream.feeds.snippets": False,
    "browser.newtabpage.activity-stream.feeds.telemetry": False,
    "browser.newtabpage.activity-stream.telemetry": False,
    "browser.newtabpage.activity-stream.showSponsored": False,
    "browser.newtabpage.activity-stream.showSponsoredTopSites": False,
    "browser.newtabpage.activity-stream.default.sites": "",
    "browser.uitour.enabled": False,
    "browser.translations.enable": False,
    "browser.toolbars.bookmarks.visibility": "never",
    "browser.bookmarks.restore_default_bookmarks": False,
    # --- keep Firefox off the network ----------------------------------------
    "network.proxy.type": 0,
    "network.captive-portal-service.enabled": False,
    "network.connectivity-service.enabled": False,
    "network.dns.disablePrefetch": True,
    "network.prefetch-next": False,
    "network.predictor.enabled": False,
    "network.http.speculative-parallel-limit": 0,
    "network.trr.mode": 5,
    "app.update.auto": False,
    "app.update.enabled": False,
    "app.update.disabledForTesting": True,
    "app.update.checkInstallTime": False,
    "app.normandy.enabled": False,
    "app.normandy.api_url": "",
    "app.shield.optoutstudies.enabled": False,
    "messaging-system.rsexperimentloader.enabled": False,
    "nimbus.rsexperimentloader.enabled": False,
    "services.settings.server": "http://127.0.0.1:9/remote-settings-disabled",
    "datareporting.policy.dataSubmissionEnabled": False,
    "datareporting.policy.dataSubmissionPolicyBypassNotification": True,
    "datareporting.healthreport.uploadEnabled": False,
    "datareporting.usage.uploadEnabled": False,
    "toolkit.telemetry.enabled": False,
    "toolkit.telemetry.unified": False,
    "toolkit.telemetry.archive.enabled": False,
    "toolkit.telemetry.server": "",
    "toolkit.telemetry.shutdownPingSender.enabled": False,
    "toolkit.telemetry.firstShutdownPing.enabled": False,
    "toolkit.telemetry.newProfilePing.enabled": False,
    "toolkit.telemetry.updatePing.enabled": False,
    "toolkit.telemetry.bhrPing.enabled": False,
    "browser.ping-centre.telemetry": False,
    "browser.safebrowsing.malware.enabled": False,
    "browser.safebrowsing.phishing.enabled": False,
    "browser.safebrowsing.blockedURIs.enabled": False,
    "browser.safebrowsing.downloads.enabled": False,
    "browser.safebrowsing.downloads.remote.enabled": False,
    "browser.safebrowsing.provider.google.updateURL": "",
    "browser.safebrowsing.provider.google4.updateURL": "",
    "browser.safebrowsing.provider.mozilla.updateURL": "",
    "browser.search.update": False,
    "browser.search.geoip.url": "",
    "browser.region.network.url": "",
    "browser.region.update.enabled": False,
    "browser.urlbar.suggest.searches": False,
    "browser.urlbar.merino.endpointURL": "",
    "browser.topsites.contile.enabled": False,
    "extensions.update.enabled": False,
    "extensions.getAddons.cache.enabled": False,
    "extensions.blocklist.enabled": False,
    "extensions.systemAddon.update.enabled": False,
    "media.gmp-manager.url": "",
    "media.gmp-gmpopenh264.enabled": False,
    "media.gmp-gmpopenh264.autoupdate": False,
    "geo.enabled": False,
    "identity.fxaccounts.enabled": False,
    "security.OCSP.enabled": 0,
    "security.remote_settings.crlite_filters.enabled": False,
    "security.remote_settings.intermediates.enabled": False,
    "dom.push.connection.enabled": False,
    "dom.push.serverURL": "",
    "browser.contentblocking.report.lockwise.enabled": False,
    "browser.discovery.enabled": False,
    "browser.vpn_promo.enabled": False,
}


# Every Firefox this process started and has not stopped yet (for emergency cleanup).
LIVE = set()


def kill_all_started():
    """SIGKILL every Firefox this harness started that is still alive (by pid)."""
    for ff in list(LIVE):
        try:
            ff.kill()
        except Exception:  # noqa: BLE001
            pass


def free_port() -> int:
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


def _pref_js(name, value) -> str:
    return "user_pref(%s, %s);\n" % (json.dumps(name), json.dumps(value))


def write_user_js(profile_dir: str, prefs: dict):
    with open(os.path.join(profile_dir, "user.js"), "w", encoding="utf-8") as f:
        f.write("// written by the ffsession e2e harness\n")
        for k, v in prefs.items():
            f.write(_pref_js(k, v))


def firefox_version() -> str:
    try:
        return subprocess.run([FIREFOX_BIN, "--version"], capture_output=True, text=True,
                              timeout=60).stdout.strip()
    except Exception as e:  # noqa: BLE001
        return "unknown (%s)" % e


# ---------------------------------------------------------------------------
# Chrome-context JavaScript snippets (bodies of async functions).
# ---------------------------------------------------------------------------

JS_PRELUDE = r"""
const { SessionStore } = ChromeUtils.importESModule("resource:///modules/sessionstore/SessionStore.sys.mjs");
const { TabStateFlusher } = ChromeUtils.importESModule("resource:///modules/sessionstore/TabStateFlusher.sys.mjs");
const { SessionSaver } = ChromeUtils.importESModule("resource:///modules/sessionstore/SessionSaver.sys.mjs");
const SYS = Services.scriptSecurityManager.getSystemPrincipal();
const sleep = ms => new Promise(r => setTimeout(r, ms));
function browserWindows() {
  const out = [];
  for (const w of Services.wm.getEnumerator("navigator:browser")) {
    if (!w.closed && w.gBrowser) out.push(w);
  }
  return out;
}
function tabLoaded(t) {
  const b = t.linkedBrowser;
  if (t.hasAttribute("busy") || t.hasAttribute("pending")) return false;
  if (b.webProgress && b.webProgress.isLoadingDocument) return false;
  return true;
}
const norm = u => Services.io.newURI(u).spec;
function showing(t, u) {
  return t.linkedBrowser.currentURI.spec === norm(u) && tabLoaded(t);
}
async function waitFor(pred, what, timeoutMs = 60000) {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error("timed out waiting for " + what);
    await sleep(50);
  }
}
async function waitTabsLoaded(tabs, timeoutMs = 120000) {
  await waitFor(() => tabs.every(t => tabLoaded(t)), "tabs to load", timeoutMs);
}
async function waitDelayedStartup(w) {
  if (w.gBrowserInit && w.gBrowserInit.delayedStartupFinished) return;
  await new Promise(resolve => {
    const obs = (subject, topic) => {
      if (subject == w) { Services.obs.removeObserver(obs, topic); resolve(); }
    };
    Services.obs.addObserver(obs, "browser-delayed-startup-finished");
  });
}
async function flushAndSave() {
  for (const w of browserWindows()) await TabStateFlusher.flushWindow(w);
  await SessionSaver.run();
}
"""

# Firefox's own view of the session: every window's tabs, closed items.
JS_SNAPSHOT = JS_PRELUDE + r"""
await SessionStore.promiseInitialized;
const wins = [];
for (const w of browserWindows()) {
  const tabs = w.gBrowser.tabs.map(t => {
    const b = t.linkedBrowser;
    let sh = null;
    try { sh = b.browsingContext ? b.browsingContext.sessionHistory : null; } catch (e) {}
    let ss = null;
    try { ss = JSON.parse(SessionStore.getTabState(t)); } catch (e) {}
    let ssUrl = null, ssTitle = null;
    if (ss && ss.entries && ss.entries.length) {
      const e = ss.entries[Math.max(0, Math.min(ss.entries.length, ss.index || ss.entries.length) - 1)];
      ssUrl = e.url; ssTitle = e.title || null;
    }
    return {
      url: b.currentURI ? b.currentURI.spec : null,
      title: b.contentTitle || null,
      label: t.label,
      pinned: !!t.pinned,
      hidden: !!t.hidden,
      container: t.userContextId || 0,
      group: t.group ? (t.group.label || null) : null,
      pending: t.hasAttribute("pending"),
      selected: t.selected,
      sh_count: sh ? sh.count : null,
      sh_index: sh ? sh.index : null,
      ss_url: ssUrl, ss_title: ssTitle,
      ss_entries: ss && ss.entries ? ss.entries.length : null,
      ss_index: ss ? (ss.index || null) : null,
      formdata: ss && ss.formdata ? ss.formdata : null,
      storage: ss && ss.storage ? ss.storage : null,
      image: ss && ss.image ? ss.image : null,
    };
  });
  wins.push({
    tabs,
    selected: w.gBrowser.tabContainer.selectedIndex,
    closed_tabs: SessionStore.getClosedTabCountForWindow(w),
    closed_tab_urls: SessionStore.getClosedTabDataForWindow(w).map(c => {
      const st = c.state || {};
      const en = st.entries || [];
      const i = Math.max(1, Math.min(en.length, st.index || en.length));
      return en.length ? en[i - 1].url : null;
    }),
  });
}
const closedWindows = SessionStore.getClosedWindowData().map(cw => ({
  tabs: (cw.tabs || []).map(t => {
    const en = t.entries || [];
    const i = Math.max(1, Math.min(en.length, t.index || en.length));
    return en.length ? en[i - 1].url : null;
  }),
  closed_tabs: (cw._closedTabs || []).length,
}));
const cur = SessionStore.getCurrentState(false);
return {
  session: { startTime: cur.session.startTime, recentCrashes: cur.session.recentCrashes },
  has_cookies: Array.isArray(cur.cookies) ? cur.cookies.length : null,
  windows: wins,
  closed_window_count: SessionStore.getClosedWindowCount(),
  closed_windows: closedWindows,
};
"""

JS_FLUSH_AND_SAVE = JS_PRELUDE + r"""
await SessionStore.promiseInitialized;
await flushAndSave();
return SessionSaver.lastSaveTime;
"""

JS_WAIT_READY = JS_PRELUDE + r"""
await SessionStore.promiseInitialized;
await SessionStore.promiseAllWindowsRestored;
for (const w of browserWindows()) await waitDelayedStartup(w);
return browserWindows().length;
"""

# arguments: [windowIndex, urls[], {replaceFirst: bool, wait: bool, userContextId}]
JS_ADD_TABS = JS_PRELUDE + r"""
const [wi, urls, opts] = arguments;
const w = browserWindows()[wi];
if (!w) throw new Error("no window " + wi);
const gb = w.gBrowser;
const added = [];
let rest = urls;
if (opts && opts.replaceFirst && urls.length) {
  const t0 = gb.tabs[0];
  gb.selectedTab = t0;
  t0.linkedBrowser.fixupAndLoadURIString(urls[0], { triggeringPrincipal: SYS });
  added.push(t0);
  rest = urls.slice(1);
}
for (const u of rest) {
  const params = { triggeringPrincipal: SYS, skipAnimation: true };
  if (opts && opts.userContextId) params.userContextId = opts.userContextId;
  added.push(gb.addTab(u, params));
}
if (!opts || opts.wait !== false) {
  await waitFor(() => added.every((t, i) => showing(t, urls[i])),
                "tabs to load", opts && opts.timeoutMs || 180000);
}
return gb.tabs.length;
"""

# arguments: [urls[]] -> opens a new window whose tabs are urls; returns window count
JS_NEW_WINDOW = JS_PRELUDE + r"""
const [urls] = arguments;
const before = browserWindows().length;
const w = OpenBrowserWindow();
await waitDelayedStartup(w);
await waitFor(() => w.gBrowser && w.gBrowser.tabs.length >= 1, "new window tab");
const gb = w.gBrowser;
const t0 = gb.tabs[0];
t0.linkedBrowser.fixupAndLoadURIString(urls[0], { triggeringPrincipal: SYS });
const added = [t0];
for (const u of urls.slice(1)) added.push(gb.addTab(u, { triggeringPrincipal: SYS, skipAnimation: true }));
await waitFor(() => added.every((t, i) => showing(t, urls[i])), "new window tabs to load", 180000);
await waitFor(() => browserWindows().length === before + 1, "window count");
return browserWindows().indexOf(w);
"""

# arguments: [windowIndex, tabIndex, urls[] to navigate through, backSteps]
JS_NAVIGATE = JS_PRELUDE + r"""
const [wi, ti, urls, back] = arguments;
const w = browserWindows()[wi];
const t = w.gBrowser.tabs[ti];
const b = t.linkedBrowser;
for (const u of urls) {
  const before = b.browsingContext.sessionHistory.count;
  b.fixupAndLoadURIString(u, { triggeringPrincipal: SYS });
  await waitFor(() => showing(t, u) &&
                b.browsingContext.sessionHistory.count > before, "navigation to " + u);
}
for (let i = 0; i < back; i++) {
  const idx = b.browsingContext.sessionHistory.index;
  b.goBack();
  await waitFor(() => b.browsingContext.sessionHistory.index === idx - 1 && tabLoaded(t), "goBack");
}
const sh = b.browsingContext.sessionHistory;
return { url: b.currentURI.spec, count: sh.count, index: sh.index };
"""

# arguments: [windowIndex, tabIndex, method, property] -> calls gBrowser[method](tab)
# (pinTab, hideTab) and returns tab[property] (pinned, hidden)
JS_TAB_ACTION = JS_PRELUDE + r"""
const [wi, ti, method, property] = arguments;
const w = browserWindows()[wi];
const t = w.gBrowser.tabs[ti];
w.gBrowser[method](t);
return t[property];
"""

# arguments: [windowIndex, [tabIndexes], label] -> puts the tabs in a new tab group
JS_GROUP = JS_PRELUDE + r"""
const [wi, tis, label] = arguments;
const w = browserWindows()[wi];
const g = w.gBrowser.addTabGroup(tis.map(i => w.gBrowser.tabs[i]), { label, color: "blue" });
return g.id;
"""

# arguments: [windowIndex, [tabIndexes]] -> closes those tabs (recorded as closed tabs)
JS_CLOSE_TABS = JS_PRELUDE + r"""
const [wi, tis] = arguments;
const w = browserWindows()[wi];
const tabs = tis.map(i => w.gBrowser.tabs[i]);
for (const t of tabs) await TabStateFlusher.flush(t.linkedBrowser);
for (const t of tabs) w.gBrowser.removeTab(t, { animate: false });
await waitFor(() => tabs.every(t => t.closing === false || !t.isConnected), "tabs to close");
return SessionStore.getClosedTabCountForWindow(w);
"""

# arguments: [windowIndex] -> closes that window (recorded as a closed window)
JS_CLOSE_WINDOW = JS_PRELUDE + r"""
const [wi] = arguments;
const wins = browserWindows();
const w = wins[wi];
const before = SessionStore.getClosedWindowCount();
await TabStateFlusher.flushWindow(w);
w.close();
await waitFor(() => w.closed && SessionStore.getClosedWindowCount() > before, "window to close");
// On Linux/Windows a window closed with no tab event after it is marked
// _shouldRestore: it is written back into "windows" (not "_closedWindows") of
// the session file, so that closing windows one by one until quit restores
// them all.  Carry on browsing as a user would (select another tab and back):
// the TabSelect events make it a real closed window in the file too.
const other = browserWindows()[0];
const gb = other.gBrowser;
const sel = gb.selectedTab;
const alt = gb.tabs.find(t => t !== sel && !t.hidden);
if (alt) { gb.selectedTab = alt; gb.selectedTab = sel; }
return SessionStore.getClosedWindowCount();
"""

# arguments: [windowIndex, tabIndex] -> Marionette window handle of that tab
JS_TAB_HANDLE = r"""
const [wi, ti] = arguments;
const { NavigableManager } = ChromeUtils.importESModule("chrome://remote/content/shared/NavigableManager.sys.mjs");
const wins = [];
for (const w of Services.wm.getEnumerator("navigator:browser")) if (!w.closed && w.gBrowser) wins.push(w);
const w = wins[wi];
const t = ti < 0 ? w.gBrowser.selectedTab : w.gBrowser.tabs[ti];
w.focus();
w.gBrowser.selectedTab = t;
return NavigableManager.getIdForBrowser(t.linkedBrowser);
"""

# arguments: [loadAll] -> waits for session restore (and, if loadAll, every tab loaded)
JS_WAIT_RESTORED = JS_PRELUDE + r"""
const [loadAll] = arguments;
await SessionStore.promiseInitialized;
await SessionStore.promiseAllWindowsRestored;
for (const w of browserWindows()) await waitDelayedStartup(w);
if (loadAll) {
  await waitFor(() => browserWindows().every(w => w.gBrowser.tabs.every(t => tabLoaded(t))),
                "restored tabs to load", 120000);
}
return browserWindows().map(w => w.gBrowser.tabs.length);
"""

JS_PREF = r"""
const [name] = arguments;
const t = Services.prefs.getPrefType(name);
if (t === Services.prefs.PREF_BOOL) return Services.prefs.getBoolPref(name);
if (t === Services.prefs.PREF_INT) return Services.prefs.getIntPref(name);
if (t === Services.prefs.PREF_STRING) return Services.prefs.getStringPref(name);
return null;
"""


class FirefoxError(Exception):
    pass


class Firefox:
    """One Firefox process on one profile directory.

    Use as a context manager; on exit the process (if still running) is killed
    through its pid.  The profile directory is kept unless it was created here
    and ``keep_profile`` is false.
    """

    def __init__(self, profile_dir=None, prefs=None, workdir=None, keep_profile=False, log_name="firefox.log",
                 desktop_env=None):
        # desktop_env: a display and a D-Bus session bus (DISPLAY,
        # DBUS_SESSION_BUS_ADDRESS) to run on as on a desktop, not headless,
        # and with its remote service on, so `firefox --new-tab URL` on the
        # same profile reaches it (headless Firefox has none).
        self.desktop_env = desktop_env
        self.created_profile = profile_dir is None
        self.profile = profile_dir or tempfile.mkdtemp(prefix="profile-", dir=workdir)
        self.keep_profile = keep_profile or not self.created_profile
        self.prefs = dict(BASE_PREFS)
        if prefs:
            self.prefs.update(prefs)
        self.port = None
        self.proc = None
        self.m = None
        self.log_path = os.path.abspath(self.profile.rstrip("/") + "." + log_name)
        self._log = None

    # -- files ---------------------------------------------------------------
    @property
    def sessionstore(self):
        return os.path.join(self.profile, "sessionstore.jsonlz4")

    @property
    def recovery(self):
        return os.path.join(self.profile, "sessionstore-backups", "recovery.jsonlz4")

    @property
    def recovery_bak(self):
        return os.path.join(self.profile, "sessionstore-backups", "recovery.baklz4")

    # -- lifecycle -------------------------------------------------------------
    def start(self, timeout=90):
        if self.proc and self.proc.poll() is None:
            raise FirefoxError("already running")
        self.port = free_port()
        prefs = dict(self.prefs)
        prefs["marionette.port"] = self.port
        write_user_js(self.profile, prefs)
        env = dict(os.environ)
        env.update({
            "MOZ_CRASHREPORTER_DISABLE": "1",
            "MOZ_CRASHREPORTER_SHUTDOWN": "1",
            "MOZ_DISABLE_AUTO_SAFE_MODE": "1",
            "MOZ_HEADLESS": "1",
            "MOZ_NO_REMOTE": "1",
        })
        self._log = open(self.log_path, "ab")
        cmd = [FIREFOX_BIN, "--marionette", "--headless", "--no-remote",
               "--remote-allow-system-access", "-profile", self.profile]
        if self.desktop_env:
            for k in ("MOZ_HEADLESS", "MOZ_NO_REMOTE"):
                env.pop(k, None)
            env.update(self.desktop_env)
            cmd = [c for c in cmd if c not in ("--headless", "--no-remote")]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT, env=env, start_new_session=True)
        LIVE.add(self)
        self.m = Marionette(port=self.port)
        try:
            self.m.connect(deadline_s=timeout)
            self.m.new_session()
            self.m.set_timeouts(script_ms=300000, page_load_ms=60000)
            self.chrome(JS_WAIT_READY)
        except Exception:
            self.kill()
            raise
        return self

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def running(self):
        return bool(self.proc and self.proc.poll() is None)

    def _reap_group(self):
        """SIGKILL whatever is left in the process group of the pid we started."""
        if not self.proc:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def quit(self, timeout=90):
        """Clean quit through Marionette; waits for the process to exit."""
        if not self.running():
            return
        try:
            self.m.quit()
        except (MarionetteError, OSError, ConnectionError):
            pass
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise FirefoxError("Firefox did not exit within %ds after Marionette:Quit" % timeout)
        # Content processes exit with the parent; make sure nothing lingers.
        time.sleep(0.2)
        self._reap_group()
        self._close_log()

    def kill(self):
        """Crash-like stop: SIGKILL the pid we started (no session store shutdown write)."""
        if self.m:
            self.m.close()
        if self.proc and self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        self._reap_group()
        self._close_log()

    def _close_log(self):
        LIVE.discard(self)
        if self._log:
            self._log.close()
            self._log = None

    def cleanup(self):
        self.kill()
        if not self.keep_profile:
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.cleanup()

    # -- scripting ---------------------------------------------------------------
    def chrome(self, script, *args):
        return self.m.chrome(script, list(args))

    def pref(self, name):
        return self.chrome(JS_PREF, name)

    def snapshot(self):
        """Firefox's own answer: windows, tabs, closed tabs/windows."""
        return self.chrome(JS_SNAPSHOT)

    def flush_and_save(self):
        """Flush every tab's state to the parent and write recovery.jsonlz4 now."""
        return self.chrome(JS_FLUSH_AND_SAVE)

    def add_tabs(self, window, urls, replace_first=False, wait=True, container=0):
        return self.chrome(JS_ADD_TABS, window, list(urls),
                           {"replaceFirst": replace_first, "wait": wait, "userContextId": container})

    def new_window(self, urls):
        return self.chrome(JS_NEW_WINDOW, list(urls))

    def navigate(self, window, tab, urls, back=0):
        return self.chrome(JS_NAVIGATE, window, tab, list(urls), back)

    def pin(self, window, tab):
        return self.chrome(JS_TAB_ACTION, window, tab, "pinTab", "pinned")

    def group_tabs(self, window, tabs, label):
        return self.chrome(JS_GROUP, window, list(tabs), label)

    def hide_tab(self, window, tab):
        """Hide the tab, as an extension would."""
        return self.chrome(JS_TAB_ACTION, window, tab, "hideTab", "hidden")

    def close_tabs(self, window, tabs):
        return self.chrome(JS_CLOSE_TABS, window, list(tabs))

    def close_window(self, window):
        return self.chrome(JS_CLOSE_WINDOW, window)

    def wait_restored(self, load_all=None):
        """Wait until session restore is done; with load_all, until every tab has loaded."""
        if load_all is None:
            load_all = self.prefs.get("browser.sessionstore.restore_on_demand") is False
        return self.chrome(JS_WAIT_RESTORED, bool(load_all))

    def select_first_window(self):
        """Point Marionette (content and chrome context) back at the first window."""
        handle = self.chrome(JS_TAB_HANDLE, 0, -1)
        self.m.switch_to_window(handle)
        return handle

    def type_into(self, window, tab, css, text):
        """Type text into an element of a tab's page with real (trusted) key events."""
        handle = self.chrome(JS_TAB_HANDLE, window, tab)
        self.m.switch_to_window(handle)
        el = self.m.find_element("css selector", css)
        self.m.send_keys(el, text)
        return handle

    def wait_file_update(self, path, older_than_mtime=None, timeout=30):
        """Wait until path exists (and is newer than older_than_mtime)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                st = os.stat(path)
                if older_than_mtime is None or st.st_mtime_ns > older_than_mtime:
                    return st.st_mtime_ns
            except FileNotFoundError:
                pass
            time.sleep(0.1)
        raise FirefoxError("%s not written within %ds" % (path, timeout))
