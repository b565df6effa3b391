#!/usr/bin/env bash
# The local page's speed (docs/guide/ui.md, docs/performance.md): a store
# holding 30 snapshots of a 4,000-tab session (20 windows, favicons, 2-3 tabs
# changed between snapshots), served by `ffsession ui --no-open`; then, over
# one kept-alive loopback connection, the median and slowest of RUNS requests
# of: the snapshot page of the newest snapshot (4,000 tabs), a search as the
# page's script sends it while typing (`part=1`: the results only; the page
# finds words by their start, so a word, its first three letters and its
# first letter, the first key typed, and `h`, which starts a word of every
# tab's URL), a search that matches nothing, and the floor: the page's small
# stylesheet (what any request through the guard costs on this machine in
# this run).
# Usage: bash scripts/bench-ui.sh [RUNS]   (default 50)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-50}
cargo build --release --locked -q -p ffsession-cli -p ffsession-gen
bin=$PWD/target/release/ffsession
gen=$PWD/target/release/ffsession-gen
dir=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
export HOME="$dir/home"
mkdir -p "$HOME" "$dir/p/sessionstore-backups"
f="$dir/p/sessionstore-backups/recovery.jsonlz4"
"$gen" session "$dir/base.jsonlz4" --tabs 4000 --windows 20 --favicon-bytes 2500
"$bin" decompress "$dir/base.jsonlz4" -o "$dir/base.json"
python3 - "$dir/base.json" "$dir" <<'PY'
import re, sys
s = open(sys.argv[1], encoding="utf-8").read()
last = int(re.search(r'"lastUpdate":(\d+)', s).group(1))
for k in range(30):
    s = s.replace('"url":"https://', '"url":"https://v%d.example/' % k, 3)
    v = re.sub(r'"lastUpdate":\d+', '"lastUpdate":%d' % (last + k * 600000), s, count=1)
    open("%s/v%02d.json" % (sys.argv[2], k), "w", encoding="utf-8").write(v)
PY
for j in "$dir"/v*.json; do
    "$bin" compress "$j" -o "$f"
    "$bin" --profile "$dir/p" --store "$dir/store" backup >/dev/null
done
newest=$("$bin" --store "$dir/store" list --json | python3 -c 'import json,sys; print(max(s["id"] for s in json.load(sys.stdin)))')
# A word of a title in the session, to search for.
word=$("$bin" tabs --json "$f" | python3 -c '
import json, re, sys
for t in json.load(sys.stdin):
    w = [x for x in re.findall(r"[A-Za-z]{5,}", t.get("title") or "")]
    if w:
        print(w[0]); break')
"$bin" --profile "$dir/p" --store "$dir/store" ui --no-open >"$dir/url" 2>"$dir/err" &
pid=$!
for _ in $(seq 100); do [ -s "$dir/url" ] && break; sleep 0.1; done
python3 - "$(head -1 "$dir/url")" "$newest" "$word" "$runs" <<'PY'
import http.client, statistics, sys, time, urllib.parse
url, newest, word, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
start = word[:3]
u = urllib.parse.urlsplit(url)
conn = http.client.HTTPConnection(u.hostname, u.port)
base = u.path.rstrip("/")
def get(path):
    conn.request("GET", base + path, headers={"Host": u.netloc})
    r = conn.getresponse()
    body = r.read()
    assert r.status == 200, (path, r.status, body[:200])
    return body
cases = [
    ("snapshot page, 4,000 tabs", "/snapshot/%s" % newest),
    ("search as you type (%s)" % word, "/search?q=%s&part=1" % urllib.parse.quote(word)),
    ("search, a word's start (%s)" % start, "/search?q=%s&part=1" % urllib.parse.quote(start)),
    ("search, one letter (%s)" % word[0], "/search?q=%s&part=1" % urllib.parse.quote(word[0])),
    ("search, h (every URL's https)", "/search?q=h&part=1"),
    ("search, no match", "/search?q=zzqqxxnomatch&part=1"),
    ("floor: the stylesheet", "/app.css"),
]
for name, path in cases:
    body = get(path)  # warm
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        get(path)
        times.append((time.perf_counter() - t) * 1000)
    print("%-32s median %7.2f ms  slowest %7.2f ms  (%d bytes)" % (name, statistics.median(times), max(times), len(body)))
PY
