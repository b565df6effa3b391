#!/usr/bin/env bash
# The memory of a long-running `ffsession watch` process: CYCLES snapshot
# cycles (default 10,000), each one set off by a new recovery.jsonlz4 put in
# place by rename, as Firefox does; VmRSS of the watch process every 1,000.
#
#   cargo build --release -p ffsession-cli -p ffsession-gen
#   bash scripts/watch-rss.sh [CYCLES] [TABS]
#
# The session (TABS tabs, default 50: about 400 KB of JSON) comes in 20
# variants with a different lastUpdate and first URL, so every cycle stores a
# snapshot and applies the default retention policy, which removes one.
set -euo pipefail
cycles=${1:-10000}
tabs=${2:-50}
root="$(cd "$(dirname "$0")/.." && pwd)"
bin=${FFSESSION:-$root/target/release/ffsession}
gen=${FFSESSION_GEN:-$root/target/release/ffsession-gen}
tmp="$(mktemp -d)"
watch_pid=""
trap '[[ -n "$watch_pid" ]] && kill "$watch_pid" 2>/dev/null; rm -rf "$tmp"' EXIT

"$gen" session "$tmp/base.json" --tabs "$tabs" --json
python3 - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
doc = json.load(open(f"{tmp}/base.json", encoding="utf-8"))
for i in range(20):
    doc["session"]["lastUpdate"] = 1_800_000_000_000 + i
    doc["windows"][0]["tabs"][0]["entries"][-1]["url"] = f"https://variant.example/{i}"
    with open(f"{tmp}/v{i}.json", "w", encoding="utf-8") as f:
        json.dump(doc, f, separators=(",", ":"))
PY
for i in $(seq 0 19); do
    "$bin" compress "$tmp/v$i.json" -o "$tmp/v$i.jsonlz4"
done
mkdir -p "$tmp/profile/sessionstore-backups"
cp "$tmp/v0.jsonlz4" "$tmp/profile/sessionstore-backups/recovery.jsonlz4"

env -i HOME="$tmp" TZ=UTC PATH="$PATH" "$bin" watch --profile "$tmp/profile" \
    --store "$tmp/store" --interval 50ms >"$tmp/watch.log" 2>&1 &
watch_pid=$!

python3 - "$tmp" "$watch_pid" "$cycles" <<'PY'
import os, re, shutil, sys, time
tmp, pid, cycles = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
target = f"{tmp}/profile/sessionstore-backups/recovery.jsonlz4"
snapshot = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC  \d+ files? ")

def snapshots():
    with open(f"{tmp}/watch.log", encoding="utf-8") as f:
        return sum(1 for line in f if snapshot.match(line))

def rss_kib():
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])

def wait_for(n):
    deadline = time.monotonic() + 30
    while snapshots() < n:
        if time.monotonic() > deadline:
            sys.exit(f"watch took no snapshot {n} in 30 s; its log:\n" + open(f"{tmp}/watch.log").read()[-2000:])
        time.sleep(0.005)

wait_for(1)
start = time.monotonic()
print("cycles  VmRSS KiB")
for c in range(1, cycles + 1):
    shutil.copyfile(f"{tmp}/v{c % 20}.jsonlz4", target + ".tmp")
    os.replace(target + ".tmp", target)
    wait_for(c + 1)
    if c % 1000 == 0:
        print(f"{c:6}  {rss_kib():9,}", flush=True)
print(f"{cycles} cycles in {time.monotonic() - start:.0f} s; "
      f"the store holds {len(os.listdir(f'{tmp}/store/chunks'))} chunk folders")
PY
grep -c "prune\|removed\|forgot" "$tmp/watch.log" | sed 's/^/log lines about retention: /' || true
tail -3 "$tmp/watch.log"
