#!/usr/bin/env bash
# Install Firefox ESR (Debian package) for the ffsession end-to-end suite.
# Idempotent: does nothing if firefox-esr is already on PATH.
set -euo pipefail
if command -v firefox-esr >/dev/null 2>&1; then
    echo "firefox-esr already installed: $(firefox-esr --version 2>/dev/null || true)"
    exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends firefox-esr
echo "installed: $(firefox-esr --version 2>/dev/null || true)"
