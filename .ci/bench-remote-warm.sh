# Sourced by .ci/bench-remote.sh (`bash .ci/bench-remote.sh warm`): remote
# commands on a machine that has opened the remote before (its key kept,
# its copy of the remote up to date), beside restic's, over a folder,
# loopback SFTP and Garage S3, in one run. Each figure is the median of
# $RUNS runs (default 7). For each server:
#   - `list --store LOC` against `restic snapshots`;
#   - `copy` with nothing new, and with one new snapshot (backed up first);
#   - one new snapshot off-site: a 4 MB session with three tabs changed,
#     `backup` then `copy`, against `restic backup` of the same file;
# restic 0.14 derives its key from the password at every run, as it does.
runs=${RUNS:-7}

median() { python3 -c 'import statistics,sys; print("%.3f" % statistics.median(map(float, sys.argv[1:])))' "$@"; }
# Wall time in ms precision (the runs are tens of milliseconds).
secs3() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
# time_runs PREPARE CMD...: the median wall time of CMD over $runs runs,
# PREPARE (a shell snippet, not timed) before each.
time_runs() {
    local prepare=$1; shift
    local times=()
    for _ in $(seq "$runs"); do
        eval "$prepare"
        local t0 t1
        t0=$(now)
        "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }
        t1=$(now)
        times+=("$(secs3 "$t0" "$t1")")
    done
    median "${times[@]}"
}

prof="$work/warm"
mkdir -p "$prof/sessionstore-backups"
f="$prof/sessionstore-backups/recovery.jsonlz4"
"$gen" session "$f" --mb 4
"$bin" decompress "$f" -o "$work/warm.json"
n=0
# A new edit of the session each time: three tabs point elsewhere.
edit() {
    n=$((n + 1))
    python3 - "$work/warm.json" "$work/edited.json" "$n" <<'EOF'
import sys
src, dst, n = sys.argv[1], sys.argv[2], sys.argv[3]
s = open(src, encoding="utf-8").read()
s = s.replace('"url":"https://', '"url":"https://edit%s.example/' % n, 3)
open(dst, "w", encoding="utf-8").write(s)
EOF
    "$bin" compress "$work/edited.json" -o "$f" >/dev/null
}

echo "| server | command | ffsession | restic 0.14 | restic / ffsession |"
echo "| --- | --- | ---: | ---: | ---: |"
for server in folder sftp s3; do
    store="$work/warm-store-$server"
    case $server in
        folder)
            loc="$work/warm-remote"
            rrepo="$work/warm-restic"
            ;;
        sftp)
            loc="$FFSESSION_TEST_SFTP/warm-$run"
            rrepo="sftp:127.0.0.1:$sftp_root/warm-restic-$run"
            ;;
        s3)
            loc="s3://ffs-bench/warm-$run"
            rrepo="s3:$FFSESSION_TEST_S3_ENDPOINT/ffs-bench/warm-restic-$run"
            ;;
    esac
    edit
    "$bin" --profile "$prof" --store "$store" backup >/dev/null
    # The first copy makes the remote and keeps its key on this machine;
    # from then on no password is given.
    FFSESSION_PASSWORD=bench "$bin" --store "$store" copy --to "$loc" >/dev/null
    "$bin" --store "$loc" list >/dev/null
    restic -q -r "$rrepo" init >/dev/null
    restic -q -r "$rrepo" backup "$f" >/dev/null
    (
        unset FFSESSION_PASSWORD
        l_ffs=$(time_runs : "$bin" --store "$loc" list)
        l_res=$(time_runs : restic -r "$rrepo" snapshots)
        c_ffs=$(time_runs : "$bin" --store "$store" copy --to "$loc")
        n_ffs=$(time_runs "edit; '$bin' --profile '$prof' --store '$store' backup >/dev/null" "$bin" --store "$store" copy --to "$loc")
        o_ffs=$(time_runs edit sh -c "'$bin' --profile '$prof' --store '$store' backup && '$bin' --store '$store' copy --to '$loc'")
        o_res=$(time_runs edit restic -r "$rrepo" backup "$f")
        ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1fx", a / (b > 0 ? b : 0.001) }'; }
        if [ "$server" = sftp ]; then
            # The floor: one SSH connection that runs nothing (key
            # exchange, authentication, a session), as every command pays.
            f_ssh=$(time_runs : ssh 127.0.0.1 true)
            echo "| $server | floor: \`ssh 127.0.0.1 true\` | $f_ssh s | | |"
        fi
        echo "| $server | list (warm) | $l_ffs s | $l_res s | $(ratio "$l_res" "$l_ffs") |"
        echo "| $server | copy, nothing new | $c_ffs s | | |"
        echo "| $server | copy, one new snapshot | $n_ffs s | | |"
        echo "| $server | one new snapshot off-site | $o_ffs s | $o_res s | $(ratio "$o_res" "$o_ffs") |"
    )
done
