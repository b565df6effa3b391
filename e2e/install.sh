#!/usr/bin/env bash
# Install Firefox ESR (Debian package), python-lz4, dbus-next, Xvfb and D-Bus for the ffsession end-to-end suite.
# Idempotent: installs only what is missing.
set -euo pipefail
# python-lz4: the harness reads and writes session files without ffsession.
if ! python3 -c "import lz4.block" 2>/dev/null; then
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore "lz4>=4,<5"
fi
# dbus-next: scenario 21's notification server on a D-Bus session bus.
if ! python3 -c "import dbus_next" 2>/dev/null; then
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore "dbus-next>=0.2,<0.3"
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# Xvfb and a D-Bus session bus: scenario 20 runs one Firefox as on a desktop,
# where `firefox --new-tab URL` reaches it (headless Firefox has no remote).
need=()
command -v Xvfb >/dev/null 2>&1 || need+=(xvfb)
command -v dbus-daemon >/dev/null 2>&1 || need+=(dbus)
if [ "${#need[@]}" -gt 0 ]; then
    $SUDO apt-get update -q
    $SUDO apt-get install -y -q --no-install-recommends "${need[@]}"
fi
if command -v firefox-esr >/dev/null 2>&1; then
    echo "firefox-esr already installed: $(firefox-esr --version 2>/dev/null || true)"
    exit 0
fi
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends firefox-esr
echo "installed: $(firefox-esr --version 2>/dev/null || true)"
