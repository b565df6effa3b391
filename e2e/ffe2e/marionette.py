"""Minimal Marionette client (protocol level 3), standard library only.

Wire format: every message is ``<decimal length>:<json>``.  On connect the
server sends a greeting object; after that we send commands
``[0, msgid, "Command:Name", {params}]`` and receive responses
``[1, msgid, error_or_null, result_or_null]``.
"""

from __future__ import annotations

import base64
import json
import socket
import time


class MarionetteError(Exception):
    def __init__(self, command, error):
        self.command = command
        self.error = error
        if isinstance(error, dict):
            msg = "%s: %s" % (error.get("error"), error.get("message"))
            st = error.get("stacktrace")
            if st:
                msg += "\n" + "\n".join(st.splitlines()[:8])
        else:
            msg = str(error)
        super().__init__("%s failed: %s" % (command, msg))


class Marionette:
    def __init__(self, host="127.0.0.1", port=2828, timeout=120.0):
        self.host = host
        self.port = port
        self.timeout = timeout
        self.sock = None
        self.msgid = 0
        self.greeting = None
        self.session_id = None
        self.capabilities = None
        self._buf = b""

    # -- transport ---------------------------------------------------------
    def connect(self, deadline_s=60.0):
        """Connect (retrying until Firefox listens) and read the greeting."""
        end = time.monotonic() + deadline_s
        last = None
        while time.monotonic() < end:
            try:
                s = socket.create_connection((self.host, self.port), timeout=5)
                s.settimeout(self.timeout)
                self.sock = s
                self.greeting = self._recv()
                if self.greeting.get("marionetteProtocol") != 3:
                    raise RuntimeError("unexpected greeting %r" % self.greeting)
                return self.greeting
            except (OSError, ValueError, ConnectionError) as e:
                last = e
                self.close()
                time.sleep(0.25)
        raise TimeoutError("could not connect to Marionette on port %d: %s" % (self.port, last))

    def close(self):
        if self.sock:
            try:
                self.sock.close()
            except OSError:
                pass
            self.sock = None

    def _send(self, obj):
        data = json.dumps(obj, ensure_ascii=False).encode("utf-8")
        self.sock.sendall(str(len(data)).encode("ascii") + b":" + data)

    def _recv(self):
        while b":" not in self._buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("Marionette connection closed")
            self._buf += chunk
        head, _, rest = self._buf.partition(b":")
        n = int(head)
        while len(rest) < n:
            chunk = self.sock.recv(max(65536, n - len(rest)))
            if not chunk:
                raise ConnectionError("Marionette connection closed")
            rest += chunk
        body, self._buf = rest[:n], rest[n:]
        return json.loads(body.decode("utf-8"))

    def send(self, command, params=None):
        """Send one command and return its result (raises MarionetteError)."""
        self.msgid += 1
        mid = self.msgid
        self._send([0, mid, command, params if params is not None else {}])
        while True:
            resp = self._recv()
            if isinstance(resp, list) and len(resp) == 4 and resp[0] == 1 and resp[1] == mid:
                break
            # Anything else (stale response) is ignored.
        _, _, err, result = resp
        if err:
            raise MarionetteError(command, err)
        return result

    # -- WebDriver/Marionette commands --------------------------------------
    def new_session(self, capabilities=None):
        caps = {"alwaysMatch": {"acceptInsecureCerts": True}}
        if capabilities:
            caps["alwaysMatch"].update(capabilities)
        r = self.send("WebDriver:NewSession", {"capabilities": caps})
        self.session_id = r.get("sessionId")
        self.capabilities = r.get("capabilities")
        return r

    def set_timeouts(self, script_ms=120000, page_load_ms=60000, implicit_ms=0):
        return self.send("WebDriver:SetTimeouts",
                         {"script": script_ms, "pageLoad": page_load_ms, "implicit": implicit_ms})

    def set_context(self, ctx):
        assert ctx in ("chrome", "content")
        return self.send("Marionette:SetContext", {"value": ctx})

    def execute(self, script, args=None):
        """Run a script (body of an *async* function; `arguments` holds args).

        The body may use `await`; the returned Promise is awaited by Marionette.
        """
        wrapped = "return (async function() {\n%s\n}).apply(null, arguments);" % script
        r = self.send("WebDriver:ExecuteScript", {"script": wrapped, "args": args or []})
        return r.get("value") if isinstance(r, dict) else r

    def chrome(self, script, args=None):
        """Run a script in chrome (privileged) context, then switch back to content."""
        self.set_context("chrome")
        try:
            return self.execute(script, args)
        finally:
            self.set_context("content")

    def window_handles(self):
        r = self.send("WebDriver:GetWindowHandles")
        return r if isinstance(r, list) else r.get("value")

    def switch_to_window(self, handle):
        return self.send("WebDriver:SwitchToWindow", {"handle": handle, "focus": True})

    def navigate(self, url):
        return self.send("WebDriver:Navigate", {"url": url})

    def back(self):
        return self.send("WebDriver:Back")

    def forward(self):
        return self.send("WebDriver:Forward")

    def current_url(self):
        r = self.send("WebDriver:GetCurrentURL")
        return r.get("value") if isinstance(r, dict) else r

    def find_element(self, using, value):
        r = self.send("WebDriver:FindElement", {"using": using, "value": value})
        v = r.get("value") if isinstance(r, dict) else r
        return v

    @staticmethod
    def _element_id(el):
        if isinstance(el, dict):
            for k in ("element-6066-11e4-a52e-4f735466cecf", "ELEMENT"):
                if k in el:
                    return el[k]
        return el

    def send_keys(self, el, text):
        return self.send("WebDriver:ElementSendKeys", {"id": self._element_id(el), "text": text})

    def screenshot(self):
        """The current page's viewport as PNG bytes (Firefox's own
        screenshot, `WebDriver:TakeScreenshot`)."""
        r = self.send("WebDriver:TakeScreenshot", {"full": False, "hash": False})
        v = r.get("value") if isinstance(r, dict) else r
        return base64.b64decode(v)

    def quit(self):
        """Ask Firefox to quit cleanly (the session store writes sessionstore.jsonlz4)."""
        try:
            return self.send("Marionette:Quit", {"flags": ["eAttemptQuit"]})
        finally:
            self.close()
