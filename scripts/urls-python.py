"""The plain way to list a session's URLs: python-lz4 and the json module.

The reference that `scripts/bench-process.sh` times next to
`ffsession tabs --format urls` (same output, one URL per open tab).
Usage: python3 scripts/urls-python.py SESSION.jsonlz4
"""
import json, sys, lz4.block
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"mozLz40\0"
session = json.loads(lz4.block.decompress(data[8:]))
out = []
for w in session["windows"]:
    for t in w["tabs"]:
        entries = t.get("entries") or []
        if entries:
            i = min(max(t.get("index", len(entries)), 1), len(entries)) - 1
            url = entries[i].get("url")
            if url:
                out.append(url)
sys.stdout.write("\n".join(out) + "\n")
