#!/usr/bin/env bash
# CI: build the packages (scripts/package.sh --profile dev, from the debug
# builds CI has made already), then use them for real:
# - the .deb is installed with apt-get: the binary reads the sample session, the
#   manual page is found by man, the completions load (bash completes a
#   command), the systemd user unit verifies and has the settings of the one
#   `ffsession service install` writes; `dpkg -r` then removes every file;
# - the Windows .zip is unpacked, its files are there, and under Wine
#   ffsession.exe reads the sample session (and ffsessionw.exe runs it).
# Run by .ci/run after .ci/platforms.sh, which installs Wine and mingw and
# builds for Windows. Needs root (dpkg) on Debian or Ubuntu; installs
# cargo-deb if it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

start=$SECONDS
step() { printf '\n== %s\n' "$*"; }
fail() {
    echo "package-test: FAILED: $*" >&2
    exit 1
}

CARGO_DEB_VERSION=3.8.0
SAMPLE=samples/session.jsonlz4
# What `info` says of the sample session (README.md shows it whole).
SAMPLE_TABS='^tabs: +24 \(2 pinned'

((EUID == 0)) || fail "run it as root: it installs and removes the .deb with dpkg"

step "cargo-deb $CARGO_DEB_VERSION"
if [[ "$(cargo deb --version 2>/dev/null)" != "cargo-deb $CARGO_DEB_VERSION" ]]; then
    t=$SECONDS
    cargo install --locked "cargo-deb@$CARGO_DEB_VERSION"
    echo "installed in $((SECONDS - t))s"
fi

step "scripts/package.sh --profile dev"
t=$SECONDS
bash scripts/package.sh --profile dev
echo "packaged in $((SECONDS - t))s"
shopt -s nullglob
debs=(dist/ffsession_*_amd64.deb)
zips=(dist/ffsession-*-windows-x86_64.zip)
shopt -u nullglob
((${#debs[@]} == 1)) || fail "expected one .deb in dist/, found ${#debs[@]}"
((${#zips[@]} == 1)) || fail "expected one Windows .zip in dist/, found ${#zips[@]}"
deb=${debs[0]}
zip=${zips[0]}

scratch=$(mktemp -d)
cleanup() {
    # Never leave the package installed, whatever failed.
    if dpkg -s ffsession >/dev/null 2>&1; then dpkg -r ffsession >/dev/null || true; fi
    rm -rf "$scratch"
}
trap cleanup EXIT

step ".deb: install $deb"
dpkg-deb --info "$deb" | sed -n '/Package:/,$p'
if dpkg -s ffsession >/dev/null 2>&1; then
    trap - EXIT
    fail "a package ffsession is installed already: remove it first (dpkg -r ffsession)"
fi
# As a user installs it: apt resolves its dependencies (libc6).
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$(realpath "$deb")"
# Every regular file the package installed, to check that removing it
# removes them all.
mapfile -t installed < <(dpkg -L ffsession | while read -r f; do [[ -f $f && ! -L $f ]] && echo "$f"; done)
echo "${#installed[@]} files installed"
for f in /usr/bin/ffsession /usr/share/man/man1/ffsession.1.gz /usr/share/man/man1/ffsession-backup.1.gz \
    /usr/share/bash-completion/completions/ffsession /usr/share/zsh/vendor-completions/_ffsession \
    /usr/share/fish/vendor_completions.d/ffsession.fish /usr/lib/systemd/user/ffsession.service; do
    [[ -f $f ]] || fail "$f is not installed"
done

step ".deb: /usr/bin/ffsession"
version=$(/usr/bin/ffsession --version)
echo "$version"
[[ $version == "ffsession $(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)" ]] ||
    fail "ffsession --version printed $version"
info=$(/usr/bin/ffsession info "$SAMPLE")
echo "$info"
grep -Eq "$SAMPLE_TABS" <<<"$info" || fail "ffsession info $SAMPLE printed no tab count"

step ".deb: manual pages"
for page in ffsession ffsession-backup; do
    # (grep reads to the end: with pipefail, -q could fail the writer)
    zcat "/usr/share/man/man1/$page.1.gz" | grep -x '\.SH NAME' >/dev/null || fail "$page.1.gz has no NAME section"
done
if command -v man >/dev/null 2>&1; then
    found=$(man -w ffsession)
    [[ $found == /usr/share/man/man1/ffsession.1.gz ]] || fail "man -w ffsession found $found"
    # Formatted, as a user reads it (no pager: stdout is no terminal).
    MANWIDTH=80 man ffsession 2>/dev/null | grep '^NAME' >/dev/null || fail "man ffsession shows no NAME"
    echo "man -w ffsession: $found; man ffsession formats"
else
    echo "man is not installed: checked the files only"
fi

step ".deb: completions"
# Load bash's and complete `ffsession backu<Tab>` as bash-completion would.
completed=$(bash -c 'set -e
    . /usr/share/bash-completion/completions/ffsession
    complete -p ffsession >/dev/null
    COMP_WORDS=(ffsession backu); COMP_CWORD=1
    _ffsession ffsession backu ffsession
    printf "%s\n" "${COMPREPLY[@]}"')
[[ $completed == backup ]] || fail "bash completed 'ffsession backu' to '$completed', not 'backup'"
echo "bash: ffsession backu<Tab> -> $completed"
if command -v zsh >/dev/null 2>&1; then zsh -n /usr/share/zsh/vendor-completions/_ffsession && echo "zsh: parses"; fi
if command -v fish >/dev/null 2>&1; then fish -n /usr/share/fish/vendor_completions.d/ffsession.fish && echo "fish: parses"; fi

step ".deb: systemd user unit"
unit=/usr/lib/systemd/user/ffsession.service
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
[[ $exec_start == "/usr/bin/ffsession watch" ]] || fail "$unit: ExecStart=$exec_start"
if command -v systemd-analyze >/dev/null 2>&1; then
    # Its user manager wants a runtime folder, which CI has none of; it
    # exits 0 on bad values and unknown keys, so any complaint fails.
    mkdir -m 700 "$scratch/run"
    said=$(XDG_RUNTIME_DIR="$scratch/run" systemd-analyze --user verify "$unit" 2>&1) \
        || fail "systemd-analyze --user verify $unit: $said"
    [[ -z $said ]] || fail "systemd-analyze --user verify $unit: $said"
    echo "systemd-analyze --user verify: no complaint"
else
    echo "no systemd-analyze: checked ExecStart only"
fi
# The settings of the unit `service install` writes (for a profile folder,
# into a scratch home), ExecStart and Description apart, are the package's.
mkdir -p "$scratch/home" "$scratch/profile"
HOME="$scratch/home" XDG_CONFIG_HOME="$scratch/home/.config" \
    /usr/bin/ffsession --profile "$scratch/profile" service install --no-enable >/dev/null
written=("$scratch"/home/.config/systemd/user/ffsession-watch-*.service)
[[ -f ${written[0]} ]] || fail "service install --no-enable wrote no unit"
settings() { grep -E '^(\[|[A-Za-z]+=)' "$1" | grep -Ev '^(ExecStart|Description)='; }
if ! diff <(settings "${written[0]}") <(settings "$unit"); then
    fail "$unit and the unit of \`service install\` (${written[0]##*/}) differ (above)"
fi
echo "same settings as \`service install\`: $(settings "$unit" | grep -v '^\[' | tr '\n' ' ')"

step ".deb: dpkg -r"
dpkg -r ffsession
for f in "${installed[@]}"; do
    [[ ! -e $f ]] || fail "$f is still there after dpkg -r"
done
echo "all ${#installed[@]} files removed"

step "Windows .zip: $zip"
python3 -m zipfile -e "$zip" "$scratch/zip"
name=$(basename "$zip" .zip)
dir="$scratch/zip/$name"
for f in ffsession.exe ffsessionw.exe ffsession-completions.ps1 README.txt; do
    [[ -f $dir/$f ]] || fail "$f is not in the zip (under $name/)"
done
grep -q "Register-ArgumentCompleter -Native -CommandName 'ffsession'" "$dir/ffsession-completions.ps1" \
    || fail "ffsession-completions.ps1 registers no completer for ffsession"
grep -q $'service install\r$' "$dir/README.txt" || fail "README.txt has no Windows line ends or no service"
ls -l "$dir"
if command -v wine >/dev/null 2>&1; then
    . .ci/wine/prefix.sh
    [[ -f $WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll ]] || wine_prefix
    info=$(wine "$dir/ffsession.exe" info "$SAMPLE" | tr -d '\r')
    echo "$info"
    grep -Eq "$SAMPLE_TABS" <<<"$info" || fail "under Wine, ffsession.exe info $SAMPLE printed no tab count"
    # The launcher runs the ffsession.exe beside it and exits with its code.
    timeout 120 wine "$dir/ffsessionw.exe" info "$SAMPLE" || fail "ffsessionw.exe info $SAMPLE failed"
    echo "ffsessionw.exe ran ffsession.exe (exit 0)"
    wineserver -k || true
else
    echo "Wine is not installed: checked the files only"
fi

printf '\n== packages checked in %ds\n' $((SECONDS - start))
