# Sourced by `bash .ci/bench-remote.sh history` (its variables and helpers):
# a history of 100 snapshots of a 4 MB session (each version has three more
# tabs pointing elsewhere and a later lastUpdate, as a session changes between
# two backups) copied to an empty remote, then one new snapshot copied, over
# loopback SFTP and S3. Beside it, restic 0.14 doing the same: its local
# repository holds the same 100 versions (`restic backup`, untimed, as our
# store is filled untimed), then `restic copy` to a repository on the same
# server (its `init` timed with the first copy, as ffsession's first copy
# makes the remote). Bytes: what each repository holds on the server (its
# growth for the second copy), counted on SFTP from the server's disk and on
# S3 with `rclone size`, for both tools alike.
versions=${FFS_BENCH_VERSIONS:-100}
s3size() { # bytes under an S3 prefix of the bench bucket
    env -u AWS_CA_BUNDLE rclone size -q --json ":s3:ffs-bench/$1" --s3-provider Other --s3-endpoint "$FFSESSION_TEST_S3_ENDPOINT" \
        --s3-access-key-id "$FFSESSION_TEST_S3_KEY_ID" --s3-secret-access-key "$FFSESSION_TEST_S3_SECRET" \
        --s3-region garage | python3 -c 'import json,sys; print(json.load(sys.stdin)["bytes"])'
}
prof="$work/ph"
mkdir -p "$prof/sessionstore-backups" "$work/versions"
f="$prof/sessionstore-backups/recovery.jsonlz4"
"$gen" session "$work/base.jsonlz4" --mb 4
"$bin" decompress "$work/base.jsonlz4" -o "$work/base.json"
python3 - "$work/base.json" "$work/versions" "$((versions + 1))" <<'PY'
import re, sys
base, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = open(base, encoding="utf-8").read()
m = re.search(r'"lastUpdate":(\d+)', s)
last = int(m.group(1))
for k in range(n):
    # Version k: 3 more tabs point elsewhere than in version k-1.
    s = s.replace('"url":"https://', '"url":"https://v%d.example/' % k, 3)
    v = re.sub(r'"lastUpdate":\d+', '"lastUpdate":%d' % (last + k * 600000), s, count=1)
    open("%s/%03d.json" % (out, k), "w", encoding="utf-8").write(v)
PY
for j in "$work"/versions/*.json; do "$bin" compress "$j" -o "${j%.json}.jsonlz4"; rm "$j"; done
echo "| server | tool | $versions snapshots | bytes | one new snapshot | bytes |"
echo "| --- | --- | ---: | ---: | ---: | ---: |"
last=$(printf '%03d' "$versions")
for server in sftp s3; do
    store="$work/hstore-$server"
    lrepo="$work/hrestic-$server"
    restic -q -r "$lrepo" init >/dev/null
    for v in "$work"/versions/*.jsonlz4; do
        [ "$v" = "$work/versions/$last.jsonlz4" ] && continue
        cp "$v" "$f"
        "$bin" --profile "$prof" --store "$store" backup >/dev/null
        restic -q -r "$lrepo" backup "$f" >/dev/null
    done
    if [ "$server" = sftp ]; then
        loc="$FFSESSION_TEST_SFTP/ffsh-$run"
        rrepo="sftp:127.0.0.1:$sftp_root/restich-$run"
        size_ffs() { du_b "$sftp_root/ffsh-$run"; }
        size_restic() { du_b "$sftp_root/restich-$run"; }
    else
        loc="s3://ffs-bench/ffsh-$run"
        rrepo="s3:$FFSESSION_TEST_S3_ENDPOINT/ffs-bench/restich-$run"
        size_ffs() { s3size "ffsh-$run"; }
        size_restic() { s3size "restich-$run"; }
    fi
    n=$("$bin" --store "$store" list --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
    [ "$n" = "$versions" ] || { echo "the store holds $n snapshots, not $versions" >&2; exit 1; }
    t0=$(now)
    "$bin" --store "$store" --profile "$prof" copy --to "$loc" >/dev/null
    t1=$(now)
    s1=$(size_ffs)
    cp "$work/versions/$last.jsonlz4" "$f"
    "$bin" --profile "$prof" --store "$store" backup >/dev/null
    t2=$(now)
    "$bin" --store "$store" --profile "$prof" copy --to "$loc" >/dev/null
    t3=$(now)
    s2=$(size_ffs)
    echo "| $server | ffsession copy | $(secs "$t0" "$t1") s | $(mb "$s1") | $(secs "$t2" "$t3") s | $(mb "$((s2 - s1))") |"

    export RESTIC_FROM_PASSWORD=bench
    t0=$(now)
    restic -q -r "$rrepo" init --from-repo "$lrepo" --copy-chunker-params >/dev/null
    restic -q -r "$rrepo" copy --from-repo "$lrepo" >/dev/null
    t1=$(now)
    s1=$(size_restic)
    restic -q -r "$lrepo" backup "$f" >/dev/null
    t2=$(now)
    restic -q -r "$rrepo" copy --from-repo "$lrepo" >/dev/null
    t3=$(now)
    s2=$(size_restic)
    echo "| $server | restic copy | $(secs "$t0" "$t1") s | $(mb "$s1") | $(secs "$t2" "$t3") s | $(mb "$((s2 - s1))") |"
done
rm -rf "$work"
