#!/usr/bin/env bash
# Whole-process cost of `ffsession backup` against another build of it (for
# the README's read-back figures): a 4 MB and a 40 MB session, each run
# backing up the next of a pool of copies whose `lastUpdate` differs (a
# changed session, a new content sharing all but a chunk with the one
# before), and then the same file again. The copy into the profile is done
# by hyperfine's --prepare, outside the timing.
# Usage: bash scripts/bench-backup.sh OTHER_FFSESSION [RUNS]   (needs hyperfine, python3 with lz4)
set -euo pipefail
cd "$(dirname "$0")/.."
other=$(realpath "$1")
runs=${2:-15}
cargo build --release --locked -q -p ffsession-cli -p ffsession-gen
bin=$PWD/target/release/ffsession
gen=$PWD/target/release/ffsession-gen
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for mb in 4 40; do
    "$gen" session "$dir/s$mb.jsonlz4" --mb "$mb" >/dev/null
    python3 - "$dir/s$mb.jsonlz4" "$dir/pool$mb" "$((runs + 5))" <<'PY'
import os, re, sys
import lz4.block
src, pool, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
b = open(src, "rb").read()
js = lz4.block.decompress(b[12:], uncompressed_size=int.from_bytes(b[8:12], "little"))
m = re.search(rb'"lastUpdate":(\d+)', js)
os.makedirs(pool)
for i in range(n):
    v = js[:m.start(1)] + str(int(m.group(1)) + 1000 * (i + 1)).encode() + js[m.end(1):]
    with open(os.path.join(pool, "%d.jsonlz4" % i), "wb") as f:
        f.write(b"mozLz40\0" + len(v).to_bytes(4, "little") + lz4.block.compress(v, store_size=False))
PY
    for who in this other; do
        p=$dir/$who$mb
        mkdir -p "$p/profile/sessionstore-backups"
        echo 0 > "$p/n"
        # Puts the next copy of the pool in place (run before each timed backup).
        cat > "$p/next.sh" <<SH
#!/bin/sh
n=\$(cat $p/n); echo \$((n + 1)) > $p/n
cp $dir/pool$mb/\$n.jsonlz4 $p/profile/sessionstore-backups/recovery.jsonlz4
SH
        chmod +x "$p/next.sh"
        "$p/next.sh"
    done
    "$bin" --profile "$dir/this$mb/profile" --store "$dir/this$mb/store" backup >/dev/null
    "$other" --profile "$dir/other$mb/profile" --store "$dir/other$mb/store" backup >/dev/null
    echo "== $mb MB session, changed before each backup"
    hyperfine -N --warmup 1 --runs "$runs" \
        --prepare "$dir/this$mb/next.sh" -n this \
        "$bin --profile $dir/this$mb/profile --store $dir/this$mb/store backup" \
        --prepare "$dir/other$mb/next.sh" -n other \
        "$other --profile $dir/other$mb/profile --store $dir/other$mb/store backup"
    echo "== $mb MB session, the same file again"
    hyperfine -N --warmup 1 --runs "$runs" -n this \
        "$bin --profile $dir/this$mb/profile --store $dir/this$mb/store backup" -n other \
        "$other --profile $dir/other$mb/profile --store $dir/other$mb/store backup"
done
