"""The plain way to summarize a session: python-lz4 and the json module.

The reference that `scripts/bench-process.sh` times next to `ffsession info`:
windows, tabs (pinned, hidden, history entries), closed tabs and windows,
last update.
Usage: python3 scripts/info-python.py SESSION.jsonlz4
"""
import json, sys, lz4.block
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"mozLz40\0"
session = json.loads(lz4.block.decompress(data[8:]))
windows = session.get("windows") or []
tabs = [t for w in windows for t in (w.get("tabs") or [])]
print("windows:", len(windows))
print("tabs:", len(tabs),
      "pinned:", sum(1 for t in tabs if t.get("pinned")),
      "hidden:", sum(1 for t in tabs if t.get("hidden")),
      "history entries:", sum(len(t.get("entries") or []) for t in tabs))
print("closed tabs:", sum(len(w.get("_closedTabs") or []) for w in windows))
print("closed windows:", len(session.get("_closedWindows") or []))
print("last update:", (session.get("session") or {}).get("lastUpdate"))
