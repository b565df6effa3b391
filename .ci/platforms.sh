#!/usr/bin/env bash
# CI for Windows and macOS, run by .ci/run after the Linux steps:
# - Windows (x86_64-pc-windows-gnu, mingw): clippy with warnings denied, then
#   every test, library and CLI, under Wine (the CLI tests run ffsession.exe);
# - macOS (aarch64-apple-darwin, through cargo-zigbuild): clippy with warnings
#   denied. Linking needs Apple's SDK, which CI cannot have: macOS is checked by
#   compiling, and its platform text and paths by unit tests that run on Linux.
# Installs what it needs itself; keeps nothing outside the clone but what
# rustup, apt, pip and cargo keep anyway (the Wine prefix is in target/).
#
# `platforms.sh build` does everything but run the Windows tests (the tools,
# both clippy steps, the Wine prefix, the Windows test build): .ci/run runs
# it beside the Linux tests, which mostly wait on servers and processes.
# `platforms.sh test` then runs the Windows tests under Wine. With no
# argument, both.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }
# Run a step and say how long it took.
timed() {
    local start=$SECONDS
    "$@"
    printf '== took %ds\n' $((SECONDS - start))
}

WINDOWS=x86_64-pc-windows-gnu
MACOS=aarch64-apple-darwin
ZIGBUILD_VERSION=0.24.1

install_tools() {
    rustup target add "$WINDOWS" "$MACOS"
    local need=()
    command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || need+=(gcc-mingw-w64-x86-64)
    command -v wine >/dev/null 2>&1 || need+=(wine wine64)
    if ((${#need[@]})); then
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q
        apt-get install -y -q --no-install-recommends "${need[@]}"
    fi
    python3 -m ziglang version >/dev/null 2>&1 || python3 -m pip install -q ziglang
    # cargo-zigbuild's prebuilt wheel from PyPI (a cargo install of it takes
    # minutes of CI's 45); pip puts it in Python's scripts folder.
    PATH="$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$PATH"
    if [[ "$(cargo-zigbuild --version 2>/dev/null)" != *"$ZIGBUILD_VERSION"* ]]; then
        python3 -m pip install -q "cargo-zigbuild==$ZIGBUILD_VERSION"
    fi
}

. .ci/wine/prefix.sh   # WINEPREFIX (under target/), wine_prefix

windows_tests() {
    CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=wine \
        cargo test --workspace --locked --target "$WINDOWS"
}

phase=${1:-all}
case $phase in build | test | all) ;; *)
    echo "usage: $0 [build|test]" >&2
    exit 2
    ;;
esac

if [[ $phase != test ]]; then
    step "platform tools: the Windows and macOS targets, mingw, Wine, zig, cargo-zigbuild"
    timed install_tools

    step "Windows: cargo clippy --target $WINDOWS (deny warnings)"
    timed cargo clippy --workspace --all-targets --locked --target "$WINDOWS" -- -D warnings

    step "macOS: cargo-zigbuild clippy --target $MACOS (deny warnings)"
    timed cargo-zigbuild clippy --workspace --all-targets --locked --target "$MACOS" -- -D warnings

    step "Windows: a Wine prefix with bcryptprimitives.dll"
    timed wine_prefix
    wineserver -k || true

    step "Windows: the tests built (cargo test --no-run)"
    timed cargo test --workspace --locked --target "$WINDOWS" --no-run
fi

if [[ $phase != build ]]; then
    step "Windows: cargo test --workspace under Wine"
    timed windows_tests
    wineserver -k || true
fi
