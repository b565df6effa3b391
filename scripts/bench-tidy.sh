#!/usr/bin/env bash
# `tidy --dry-run` against `info` on the 40 MB generated session (4,000 tabs),
# the profile's only session file: interleaved runs of the release build,
# medians and the ratio (the issue's bound: within 2x of `info`).
# Usage: bash scripts/bench-tidy.sh [RUNS]   (default 21 runs of each command)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-21}
cargo build --release --locked -q -p ffsession-cli -p ffsession-gen
bin=$PWD/target/release/ffsession
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/profile"
target/release/ffsession-gen session "$dir/profile/sessionstore.jsonlz4" --mb 40
export FFSESSION_STORE="$dir/store" FFSESSION_CONFIG="$dir/none.toml"
python3 - "$bin" "$dir/profile" "$runs" <<'PY'
import statistics, subprocess, sys, time
bin, profile, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
info = [bin, "info", profile + "/sessionstore.jsonlz4"]
tidy = [bin, "tidy", "--profile", profile, "--dry-run"]
cmds = {
    "info": info,
    "tidy --dry-run --archive-older-than 1d --close-duplicates":
        tidy + ["--archive-older-than", "1d", "--close-duplicates"],
    "tidy --dry-run, all five rules":
        tidy + ["--archive-older-than", "1d", "--close-duplicates", "--trim-history", "3",
                "--drop-closed", "--drop-payload"],
}
times = {name: [] for name in cmds}
for name, cmd in cmds.items():  # warm-up, and every command must succeed
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
for _ in range(runs):
    for name, cmd in cmds.items():
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
        times[name].append((time.perf_counter() - t) * 1000)
base = statistics.median(times["info"])
for name, ts in times.items():
    m = statistics.median(ts)
    print(f"{name}: median {m:.1f} ms over {runs} runs ({m / base:.2f}x info)")
PY
