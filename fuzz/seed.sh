#!/usr/bin/env bash
# Regenerate the seed corpora in fuzz/corpus/<target>/ (git-ignored).
#
#   fuzz/seed.sh            # add seeds to whatever is already in fuzz/corpus/
#   fuzz/seed.sh --clean    # wipe fuzz/corpus/ first
#
# Seeds come from the repo's generator (ffsession-gen): the bad-file corpus
# (`ffsession-gen corpus`) and a few small valid sessions, both mozlz4 and plain
# JSON (`ffsession-gen session OUT --tabs N [--json]`), plus samples/*.jsonlz4
# and a handful of tiny hand-written sessions (closed tabs and windows, groups,
# escapes, nulls, floats, BOM and `( ... )` wrapping) so the fuzzer starts from
# every branch of the model. The generator is built into fuzz/target/seed-gen so
# the main workspace's target/ is not locked.
set -euo pipefail

fuzz="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$fuzz")"
corpus="$fuzz/corpus"
if [[ "${1:-}" == "--clean" ]]; then
    rm -rf "$corpus"
fi
mkdir -p "$corpus/mozlz4" "$corpus/session" "$corpus/session_json" "$corpus/rescue" "$corpus/summarize" "$corpus/tab" "$corpus/at_once" "$corpus/zen"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

gen() {
    CARGO_TARGET_DIR="$fuzz/target/seed-gen" nice -n 10 \
        cargo run -q --manifest-path "$root/Cargo.toml" -p ffsession-gen -- "$@"
}

# 1. The bad-file corpus.
gen corpus "$tmp/bad"

# 2. Small valid sessions, mozlz4 and JSON.
mkdir -p "$tmp/valid"
for tabs in 1 3; do
    gen session "$tmp/valid/gen-tabs$tabs.jsonlz4" --tabs "$tabs"
    gen session "$tmp/valid/gen-tabs$tabs.json" --tabs "$tabs" --json
done
for f in "$root"/samples/*.jsonlz4; do
    [[ -e "$f" ]] && cp "$f" "$tmp/valid/sample-$(basename "$f")"
done

# 3. Tiny hand-written sessions, each as JSON and as mozlz4 (one literal-only
#    LZ4 block, which is valid LZ4).
mkdir -p "$tmp/tiny"
python3 - "$tmp/tiny" <<'PY'
import os, struct, sys

out = sys.argv[1]

def lz4_literals(data: bytes) -> bytes:
    n = len(data)
    block = bytearray([min(n, 15) << 4])
    if n >= 15:
        rest = n - 15
        while rest >= 255:
            block.append(255)
            rest -= 255
        block.append(rest)
    return bytes(block) + data

def mozlz4(data: bytes) -> bytes:
    return b"mozLz40\0" + struct.pack("<I", len(data)) + lz4_literals(data)

tiny = {
    "empty-session": b'{"windows":[]}',
    "one-tab": b'{"windows":[{"tabs":[{"entries":[{"url":"https://a.test/","title":"A"}],"index":1}],"selected":1}],"selectedWindow":1,"session":{"lastUpdate":1700000000000,"startTime":1699990000000,"recentCrashes":0}}',
    "closed": b'{"windows":[{"tabs":[{"entries":[{"url":"a"},{"url":"b","title":"B"}],"index":5,"pinned":true,"hidden":null,"lastAccessed":1.5e12,"userContextId":2}],"_closedTabs":[{"state":{"entries":[{"url":"c"}]},"title":"C","closedAt":5,"pos":0}]}],"_closedWindows":[{"tabs":[{"entries":[],"userTypedValue":"typed"}],"closedAt":7,"title":"W"}]}',
    "groups": b'{"windows":[{"tabs":[{"entries":[{"url":"a"}],"groupId":"g1"},{"entries":[{"url":"b"}],"groupId":17}],"groups":[{"id":"g1","name":"Work","color":"blue","collapsed":true},{"id":17}]}],"savedGroups":[{"id":"s","name":"Later","tabs":[{"state":{"entries":[{"url":"z"}]}}]}]}',
    "escapes": b'{"windows":[{"tabs":[{"entries":[{"url":"https://x.test/?a=1&b=\\"2\\"","title":"a \\"q\\", <b> & \'x\'\\nline2 \\ud83e\\udd8a | [md] *x*\\t\\u0000"}]}]}]}',
    "nulls-floats": b'{"windows":[{"tabs":[{"entries":[{"url":null,"title":null}],"index":null,"pinned":null,"groupId":null,"userContextId":-1,"lastAccessed":1e400}],"selected":2.7,"width":-5,"height":1e3,"screenX":null,"sizemode":"maximized","_closedTabs":[]}],"selectedWindow":0,"session":{"lastUpdate":-1}}',
}
for name, body in tiny.items():
    with open(os.path.join(out, name + ".json"), "wb") as f:
        f.write(body)
    with open(os.path.join(out, name + ".jsonlz4"), "wb") as f:
        f.write(mozlz4(body))
with open(os.path.join(out, "bom-wrapped.js"), "wb") as f:
    f.write(b'\xef\xbb\xbf \n({"windows":[{"tabs":[{"entries":[{"url":"a"}]}]}]})\n')
PY

# mozlz4: anything with a header, valid or broken.
cp "$tmp"/bad/* "$tmp"/valid/*.jsonlz4 "$tmp"/tiny/*.jsonlz4 "$corpus/mozlz4/"
# session: everything.
cp "$tmp"/bad/* "$tmp"/valid/* "$tmp"/tiny/* "$corpus/session/"
# session_json: plain JSON only (valid, tiny and the broken JSON files).
cp "$tmp"/valid/*.json "$tmp"/tiny/*.json "$tmp"/tiny/*.js "$corpus/session_json/"
for f in "$tmp"/bad/*.js; do
    [[ "$(basename "$f")" == empty.js ]] || cp "$f" "$corpus/session_json/"
done

# summarize: the session_json seeds behind a byte that picks the piece size
# (8 and 64 bytes).
for f in "$corpus"/session_json/*; do
    for size in 07 3f; do
        { printf "\x$size"; cat "$f"; } >"$corpus/summarize/$size-$(basename "$f")"
    done
done

# at_once: the same behind a byte that picks the step (4 bytes, in lockstep,
# and 64 bytes), and the mozlz4 files behind one.
for f in "$corpus"/session_json/* "$corpus"/mozlz4/*; do
    for step in 07 7e; do
        { printf "\x$step"; cat "$f"; } >"$corpus/at_once/$step-$(basename "$f")"
    done
done

# tab: the plain JSON seeds too (the target reads each object in them).
cp "$corpus"/session_json/* "$corpus/tab/"

# rescue: everything, and the real Firefox and era fixtures (Firefox's own
# LZ4 blocks, which `rescue` compresses again to locate damage).
cp "$tmp"/bad/* "$tmp"/valid/* "$tmp"/tiny/* "$corpus/rescue/"
cp "$root"/crates/ffsession/tests/fixtures/firefox/*.jsonlz4 \
    "$root"/crates/ffsession/tests/fixtures/firefox-large/*.jsonlz4 \
    "$root"/crates/ffsession/tests/fixtures/eras/* "$corpus/rescue/"

# zen: the two files of a Zen profile's moment (ffsession-gen zen), JSON and
# mozlz4, and the small sessions (Firefox's files, which Zen's reader refuses).
gen zen "$tmp/zen"
cp "$tmp"/zen/* "$tmp"/valid/* "$tmp"/tiny/* "$corpus/zen/"

for t in mozlz4 session session_json rescue summarize tab at_once zen; do
    echo "$t: $(ls "$corpus/$t" | wc -l) seeds, $(du -sh "$corpus/$t" | cut -f1)"
done
