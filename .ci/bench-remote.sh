#!/usr/bin/env bash
# Time and bytes of a first copy and of a copy after one new snapshot, 4 MB
# and 40 MB sessions, over loopback SFTP and S3 (the servers of
# .ci/servers.sh), beside restic's `backup` to the same servers in the same
# run. Not part of CI; run by hand:
#   cargo build --release -p ffsession-cli -p ffsession-gen
#   bash .ci/bench-remote.sh            (starts the servers itself)
#   bash .ci/bench-remote.sh history    (100 snapshots, then one more:
#                                        .ci/bench-remote-history.sh)
#   bash .ci/bench-remote.sh warm       (list, copy and one new snapshot
#                                        on a machine that opened the remote
#                                        before: .ci/bench-remote-warm.sh)
# Prints a Markdown table (docs/guide/remote.md keeps the latest). Bytes: on
# SFTP, what the repository holds on the server's disk (its growth for the
# second copy), for both tools; on S3, what each tool reports (ffsession: the
# encrypted objects sent; restic 0.14: `data_added`, before its compression). Both tools
# derive their key from the password once per run (scrypt), and the first
# copy includes making the repository (ffsession's first copy makes it;
# restic's `init` is timed with its first backup), as a user meets them.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${FFSESSION_TEST_SERVERS:-}" ]; then . .ci/servers.sh; fi
bin=target/release/ffsession
gen=target/release/ffsession-gen
work=$(mktemp -d)
export HOME="$work/home" FFSESSION_PASSWORD=bench RESTIC_PASSWORD=bench
mkdir -p "$HOME"
export PATH="$FFSESSION_TEST_SSH_BIN:$PATH"
export AWS_ACCESS_KEY_ID="$FFSESSION_TEST_S3_KEY_ID" AWS_SECRET_ACCESS_KEY="$FFSESSION_TEST_S3_SECRET"
export AWS_ENDPOINT_URL="$FFSESSION_TEST_S3_ENDPOINT" AWS_REGION=garage AWS_DEFAULT_REGION=garage
sftp_root=${FFSESSION_TEST_SFTP#sftp://127.0.0.1/}
run=$(date +%s)

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
du_b() { find "$1" -type f -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }'; }
mb() { awk -v n="$1" 'BEGIN { printf "%.2f MB", n / 1e6 }'; }

if [ "${1:-}" = history ]; then
    . .ci/bench-remote-history.sh
    exit
fi
if [ "${1:-}" = warm ]; then
    . .ci/bench-remote-warm.sh
    exit
fi

echo "| session | server | tool | first copy | bytes | after one new snapshot | bytes |"
echo "| --- | --- | --- | ---: | ---: | ---: | ---: |"
for size in 4 40; do
    prof="$work/p$size"
    mkdir -p "$prof/sessionstore-backups"
    f="$prof/sessionstore-backups/recovery.jsonlz4"
    "$gen" session "$f" --mb "$size"
    # The edit: three tabs point elsewhere.
    "$bin" decompress "$f" -o "$work/s$size.json"
    python3 - "$work/s$size.json" <<'EOF'
import sys
p = sys.argv[1]
s = open(p, encoding="utf-8").read()
s = s.replace('"url":"https://', '"url":"https://changed.example/', 3)
open(p, "w", encoding="utf-8").write(s)
EOF
    "$bin" compress "$work/s$size.json" -o "$work/edited$size.jsonlz4"
    cp "$f" "$work/orig$size.jsonlz4"
    for server in sftp s3; do
        cp "$work/orig$size.jsonlz4" "$f"
        store="$work/store-$size-$server"
        "$bin" --profile "$prof" --store "$store" backup >/dev/null
        if [ "$server" = sftp ]; then
            loc="$FFSESSION_TEST_SFTP/ffs-$size-$run"
            rrepo="sftp:127.0.0.1:$sftp_root/restic-$size-$run"
        else
            loc="s3://ffs-bench/ffs-$size-$run"
            rrepo="s3:$FFSESSION_TEST_S3_ENDPOINT/ffs-bench/restic-$size-$run"
        fi
        t0=$(now)
        first=$("$bin" --store "$store" --profile "$prof" copy --to "$loc" --json)
        t1=$(now)
        [ "$server" = sftp ] && s1=$(du_b "$sftp_root/ffs-$size-$run")
        cp "$work/edited$size.jsonlz4" "$f"
        "$bin" --profile "$prof" --store "$store" backup >/dev/null
        t2=$(now)
        second=$("$bin" --store "$store" --profile "$prof" copy --to "$loc" --json)
        t3=$(now)
        b1=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["bytes_sent"])' "$first")
        b2=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["bytes_sent"])' "$second")
        if [ "$server" = sftp ]; then
            # What the server holds: the repository's growth on its disk.
            b1=$s1
            b2=$(($(du_b "$sftp_root/ffs-$size-$run") - s1))
        fi
        echo "| $size MB | $server | ffsession copy | $(secs "$t0" "$t1") s | $(mb "$b1") | $(secs "$t2" "$t3") s | $(mb "$b2") |"

        # restic backup of the same file straight to the server.
        cp "$work/orig$size.jsonlz4" "$f"
        t0=$(now)
        restic -q -r "$rrepo" init >/dev/null
        r1=$(restic -r "$rrepo" backup --json "$f" | tail -1)
        t1=$(now)
        [ "$server" = sftp ] && s1=$(du_b "$sftp_root/restic-$size-$run")
        cp "$work/edited$size.jsonlz4" "$f"
        t2=$(now)
        r2=$(restic -r "$rrepo" backup --json "$f" | tail -1)
        t3=$(now)
        rb1=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["data_added"])' "$r1")
        rb2=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["data_added"])' "$r2")
        if [ "$server" = sftp ]; then
            rb1=$s1
            rb2=$(($(du_b "$sftp_root/restic-$size-$run") - s1))
        fi
        echo "| $size MB | $server | restic backup | $(secs "$t0" "$t1") s | $(mb "$rb1") | $(secs "$t2" "$t3") s | $(mb "$rb2") |"
    done
done
rm -rf "$work"
