#!/usr/bin/env bash
# Whole-process figures (docs/performance.md): wall time of `ffsession info` and
# `ffsession tabs --format urls` on a 23.6 MB-JSON, 4,000-tab session beside the
# same jobs in Python (python-lz4 + json) in the same run, `info` on a 4 MB
# session, `ffsession --version` (starting the program, the floor of every
# command: it shows how fast this machine starts processes in this run), and
# peak RSS of `info` on the 23.6 MB and 40 MB sessions against
# their JSON size.
# Usage: bash scripts/bench-process.sh [RUNS]   (default 30 runs; needs hyperfine
# for the times, python-lz4 for the Python side; RSS needs GNU time)
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
"$gen" session "$dir/s4.jsonlz4" --mb 4
json_size() { "$bin" info --json "$1" | sed -n 's/.*"json_size": \([0-9]*\).*/\1/p'; }
for s in s4 s23 s40; do
    echo "$s: $(stat -c %s "$dir/$s.jsonlz4") bytes mozlz4, $(json_size "$dir/$s.jsonlz4") bytes JSON"
done

median() { # hyperfine JSON export -> "median ms" of each command, one per line
    python3 -c 'import json, statistics, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print("%.2f" % (statistics.median(r["times"]) * 1000))' "$1"
}
if command -v hyperfine >/dev/null; then
    cmds=("$bin info $dir/s23.jsonlz4" "$bin tabs --format urls $dir/s23.jsonlz4" "$bin info $dir/s4.jsonlz4" "$bin --version")
    py=0
    if python3 -c 'import lz4.block' 2>/dev/null; then
        cmp <(python3 scripts/urls-python.py "$dir/s23.jsonlz4") \
            <("$bin" tabs --format urls "$dir/s23.jsonlz4")
        cmds+=("python3 scripts/info-python.py $dir/s23.jsonlz4" "python3 scripts/urls-python.py $dir/s23.jsonlz4")
        py=1
    else
        echo "(python-lz4 not installed: skipping the Python reference)"
    fi
    # One hyperfine run for all, so that the ratios come from the same minutes.
    hyperfine -N --warmup 3 --runs "$runs" --export-json "$dir/hf.json" "${cmds[@]}" >/dev/null
    mapfile -t m < <(median "$dir/hf.json")
    echo "info, 23.6 MB:            median ${m[0]} ms over $runs runs"
    echo "tabs --format urls, 23.6: median ${m[1]} ms"
    echo "info, 4 MB:               median ${m[2]} ms"
    echo "--version (start-up):     median ${m[3]} ms"
    if [ "$py" = 1 ]; then
        python3 - "${m[@]}" <<'PY'
import sys
info, urls, _, _, py_info, py_urls = map(float, sys.argv[1:7])
print(f"Python summary: median {py_info:.1f} ms -> info is {py_info / info:.1f}x faster")
print(f"Python URL list: median {py_urls:.1f} ms -> tabs --format urls is {py_urls / urls:.1f}x faster")
PY
    fi
else
    echo "(hyperfine not installed: skipping the times)"
fi

for s in s23 s40; do
    json=$(json_size "$dir/$s.jsonlz4")
    rss=$( { /usr/bin/time -f "%M" "$bin" info "$dir/$s.jsonlz4" >/dev/null; } 2>&1 | tail -1)
    python3 -c 'import sys; rss, json = int(sys.argv[2]) * 1024, int(sys.argv[3]); print(f"{sys.argv[1]}: info peak RSS {rss / 2**20:.1f} MiB = {rss / json:.2f}x its JSON ({json / 2**20:.1f} MiB)")' "$s" "$rss" "$json"
done
