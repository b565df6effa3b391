"""Test pages served from 127.0.0.1 by a small threaded http.server.

Routes (N is any integer, extra query strings are ignored but kept in URLs):
  /p/N        plain page, distinct title (some non-ASCII / quote characters)
  /script/N   plain page whose title is markup (SCRIPT_TITLE)
  /form/N     page with a text input and a textarea (for typed form data)
  /storage/N  page that sets sessionStorage on load (keys `e2e-key-N` and
              `counter`, each followed by PageServer.storage_mark)
  /icon/N     page whose favicon is a data: URI
  /favicon.ico  204 (avoid noisy 404s)
"""

from __future__ import annotations

import html
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Title fragments cycled through so titles exercise escaping and UTF-8.
TITLE_VARIANTS = [
    "plain",
    "Ünïcødé — 日本語 🦊",
    'double "quotes"',
    "single 'quotes'",
    "less < than & amp",
    "mixed \"<&>'\" Ωμέγα",
    "emoji 🎉🚀 and tab-like spaces",
    "back\\slash and /slash",
]

# 1x1 transparent PNG
ICON_DATA_URI = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAA"
                 "DUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")


# The title of /script/N: markup a page must show as text, never run.
SCRIPT_TITLE = ("<script>document.body.dataset.pwned='script'</script>"
                "<img src=x onerror=\"document.body.dataset.pwned='img'\">")


def title_for(kind: str, n: int) -> str:
    """The exact document.title Firefox should report for /kind/n."""
    if kind == "script":
        return "Script %d · %s" % (n, SCRIPT_TITLE)
    return "%s %d · %s" % (kind.capitalize(), n, TITLE_VARIANTS[n % len(TITLE_VARIANTS)])


def _page(title: str, body: str, head: str = "") -> bytes:
    doc = ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
           "<title>%s</title>%s</head><body>%s</body></html>\n"
           % (html.escape(title, quote=True), head, body))
    return doc.encode("utf-8")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ffsession-e2e/1"

    def log_message(self, fmt, *args):  # quiet
        pass

    def _send(self, code, body=b"", ctype="text/html; charset=utf-8"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        parts = [p for p in u.path.split("/") if p]
        if u.path == "/favicon.ico":
            return self._send(204, b"", "image/x-icon")
        if len(parts) < 2 or not parts[1].isdigit():
            return self._send(404, _page("not found", "<p>not found</p>"))
        kind, n = parts[0], int(parts[1])
        title = title_for(kind, n)
        # Every page declares an icon so Firefox does not fetch /favicon.ico.
        noicon = '<link rel="icon" href="data:,">'
        if kind in ("p", "script"):
            return self._send(200, _page(title, "<h1>%s</h1><p>plain page %d</p>"
                                         % (html.escape(title), n), noicon))
        if kind == "form":
            body = ('<h1>form %d</h1><form action="/p/%d" method="get">'
                    '<input id="name" name="name" type="text">'
                    '<textarea id="comment" name="comment"></textarea>'
                    '<input type="submit" value="go"></form>' % (n, n))
            return self._send(200, _page(title, body, noicon))
        if kind == "storage":
            mark = self.server.storage_mark
            body = ("<h1>storage %d</h1><script>"
                    "sessionStorage.setItem('e2e-key-%d%s', 'value-%d Ünï');"
                    "sessionStorage.setItem('counter%s', String(%d));"
                    "</script>" % (n, n, mark, n, mark, n))
            return self._send(200, _page(title, body, noicon))
        if kind == "icon":
            head = '<link rel="icon" type="image/png" href="%s">' % ICON_DATA_URI
            return self._send(200, _page(title, "<h1>icon %d</h1>" % n, head))
        return self._send(404, _page("not found", "<p>unknown kind</p>"))


class PageServer:
    """Threaded HTTP server on 127.0.0.1 with an ephemeral port."""

    def __init__(self):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        # Appended to the sessionStorage keys the storage pages write: a
        # scenario sets it to tell items a page wrote from items Firefox
        # restored from a session file (and puts "" back when done).
        self.httpd.storage_mark = ""
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever,
                                       name="e2e-pages", daemon=True)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def storage_mark(self) -> str:
        return self.httpd.storage_mark

    @storage_mark.setter
    def storage_mark(self, mark: str):
        self.httpd.storage_mark = mark

    def url(self, kind: str, n: int, query: str = "") -> str:
        u = "http://127.0.0.1:%d/%s/%d" % (self.port, kind, n)
        if query:
            u += "?" + query
        return u
