#!/usr/bin/env bash
# Whole-process figures for the README: wall time of `ffsession tabs --format urls`
# on a 23 MB-JSON, 4,000-tab session (and the same job in Python, for scale), and peak
# RSS of `ffsession info` on a 40 MB one.
# Usage: bash scripts/bench-process.sh [RUNS]   (default 30 runs; uses hyperfine if installed)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-30}
cargo build --release --locked -q -p ffsession-cli -p ffsession-gen
bin=target/release/ffsession
gen=target/release/ffsession-gen
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$gen" session "$dir/s23.jsonlz4" --tabs 4000 --windows 20 --favicon-bytes 2500
"$gen" session "$dir/s40.jsonlz4" --mb 40
json23=$("$bin" info --json "$dir/s23.jsonlz4" | sed -n 's/.*"json_size": \([0-9]*\).*/\1/p')
json40=$("$bin" info --json "$dir/s40.jsonlz4" | sed -n 's/.*"json_size": \([0-9]*\).*/\1/p')
echo "23 MB session: $(stat -c %s "$dir/s23.jsonlz4") bytes compressed, $json23 bytes JSON, 4000 tabs"
if command -v hyperfine >/dev/null; then
    hyperfine -N --warmup 3 --runs "$runs" --export-json "$dir/hf.json" \
        "$bin tabs --format urls $dir/s23.jsonlz4"
    python3 -c 'import json, statistics, sys; t = json.load(open(sys.argv[1]))["results"][0]["times"]; print(f"  median {statistics.median(t) * 1000:.1f} ms over {len(t)} runs")' "$dir/hf.json"
    # The same job in Python (lz4 + json), for scale, when python-lz4 is there.
    if python3 -c 'import lz4.block' 2>/dev/null; then
        cmp <(python3 scripts/urls-python.py "$dir/s23.jsonlz4") \
            <("$bin" tabs --format urls "$dir/s23.jsonlz4")
        hyperfine -N --warmup 1 --runs 10 "python3 scripts/urls-python.py $dir/s23.jsonlz4"
    else
        echo "(python-lz4 not installed: skipping the Python reference)"
    fi
else
    for _ in 1 2 3; do "$bin" tabs --format urls "$dir/s23.jsonlz4" >/dev/null; done
    python3 - "$bin" "$dir/s23.jsonlz4" "$runs" <<'PY'
import subprocess, sys, time, statistics
bin, path, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
times = []
for _ in range(runs):
    t = time.perf_counter()
    subprocess.run([bin, "tabs", "--format", "urls", path], stdout=subprocess.DEVNULL, check=True)
    times.append((time.perf_counter() - t) * 1000)
print(f"tabs --format urls: median {statistics.median(times):.1f} ms, min {min(times):.1f} ms over {runs} runs")
PY
fi
compressed40=$(stat -c %s "$dir/s40.jsonlz4")
rss_kb=$( { /usr/bin/time -f "%M" "$bin" info "$dir/s40.jsonlz4" >/dev/null; } 2>&1 | tail -1)
limit_kb=$(( (compressed40 + json40) * 11 / 10 / 1024 ))
echo "40 MB session: $compressed40 bytes compressed, $json40 bytes JSON"
echo "ffsession info peak RSS: ${rss_kb} KiB (limit compressed + JSON + 10% = ${limit_kb} KiB)"
