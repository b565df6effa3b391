# Sourced by .ci/platforms.sh and .ci/package-test.sh (from the clone's root).
# Wine, in a prefix of its own under target/: quiet, without the Mono and
# Gecko installers, and with the bcryptprimitives.dll Wine 8 lacks (Rust's
# std draws random numbers from its ProcessPrng; bcryptprimitives.c says more).
export WINEPREFIX="$PWD/target/wine"
export WINEDEBUG=-all
export WINEDLLOVERRIDES="mscoree,mshtml="
wine_prefix() {
    local dll=target/wine-dll/bcryptprimitives.dll
    mkdir -p "$(dirname "$dll")"
    x86_64-w64-mingw32-gcc -O2 -shared -s -o "$dll" .ci/wine/bcryptprimitives.c -ladvapi32
    wineboot -i
    wineserver -w
    cp "$dll" "$WINEPREFIX/drive_c/windows/system32/"
}
