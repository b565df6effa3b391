# Real servers on 127.0.0.1 for the remote-store tests (issue 23): OpenSSH's
# sshd (SFTP), Garage (S3) and rclone's WebDAV server (over HTTP, and over
# HTTPS). Sourced by .ci/run (`. .ci/servers.sh`), so the FFSESSION_TEST_*
# variables it exports reach `cargo test`; the servers stop when the shell
# that sourced it exits.
# Also usable by hand: `bash .ci/servers.sh` starts them and prints the
# variables (then `bash .ci/servers.sh stop` stops them and unmounts the
# small disk).
#
# Nothing here touches ~/.ssh: the tests reach sshd through a wrapper `ssh`
# (first on PATH) that reads its own config, key and known_hosts.

# The ports are below 32768, out of the kernel's range for the local end of
# outgoing connections (32768-60999), which could take one of them first.
ffs_servers_main() {
    set -eu
    local root="${FFS_SERVERS:-/tmp/ffsession-servers}"
    export FFS_SERVERS="$root"
    local ssh_port=31022 webdav_port=31080 webdavs_port=31443 small_webdav_port=31081
    # Servers and the small disk of a run before (killed, or started by
    # hand) go first: a server still running would hold its port, and
    # `rm -rf` cannot remove a mounted folder.
    ffs_servers_stop
    rm -rf "$root"
    mkdir -p "$root/bin" "$root/sftp" "$root/webdav" "$root/garage" "$root/small"
    chmod 700 "$root"

    local need=()
    command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || need+=(openssh-server)
    command -v rclone >/dev/null 2>&1 || need+=(rclone)
    command -v restic >/dev/null 2>&1 || need+=(restic)
    command -v age >/dev/null 2>&1 || need+=(age)
    command -v zstd >/dev/null 2>&1 || need+=(zstd)
    command -v openssl >/dev/null 2>&1 || need+=(openssl)
    if [ "${#need[@]}" -gt 0 ]; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
    fi
    # --- sshd: its own host key, a user key, a config of its own.
    ssh-keygen -q -t ed25519 -N '' -f "$root/host_key"
    ssh-keygen -q -t ed25519 -N '' -f "$root/user_key"
    cp "$root/user_key.pub" "$root/authorized_keys"
    chmod 600 "$root/authorized_keys"
    mkdir -p /run/sshd
    cat >"$root/sshd_config" <<EOF
Port $ssh_port
ListenAddress 127.0.0.1
HostKey $root/host_key
PidFile $root/sshd.pid
AuthorizedKeysFile $root/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
Subsystem sftp internal-sftp
MaxSessions 64
MaxStartups 64
EOF
    /usr/sbin/sshd -f "$root/sshd_config" -E "$root/sshd.log"
    echo "[127.0.0.1]:$ssh_port $(cut -d' ' -f1,2 "$root/host_key.pub")" >"$root/known_hosts"
    cat >"$root/ssh_config" <<EOF
Host 127.0.0.1
    Port $ssh_port
    User $(id -un)
    IdentityFile $root/user_key
    IdentitiesOnly yes
    UserKnownHostsFile $root/known_hosts
    StrictHostKeyChecking yes
    BatchMode yes
EOF
    printf '#!/bin/sh\nexec /usr/bin/ssh -F %s "$@"\n' "$root/ssh_config" >"$root/bin/ssh"
    chmod 755 "$root/bin/ssh"

    # --- rclone's WebDAV server.
    rclone serve webdav "$root/webdav" --addr "127.0.0.1:$webdav_port" \
        --user ffs --pass ffs-webdav-secret >"$root/webdav.log" 2>&1 &
    echo $! >"$root/webdav.pid"

    # --- The same over HTTPS, with a certificate from a CA made here, which
    # the tests trust through SSL_CERT_FILE (read by the system's verifier
    # on Linux).
    local ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
    openssl req -x509 "${ec[@]}" -keyout "$root/ca.key" -out "$root/ca.pem" \
        -days 3 -subj "/CN=ffsession test CA" 2>/dev/null
    openssl req "${ec[@]}" -keyout "$root/tls.key" -out "$root/tls.csr" \
        -subj "/CN=127.0.0.1" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' \
        >"$root/tls.ext"
    openssl x509 -req -in "$root/tls.csr" -CA "$root/ca.pem" -CAkey "$root/ca.key" \
        -CAcreateserial -out "$root/tls.pem" -days 3 -extfile "$root/tls.ext" 2>/dev/null
    rclone serve webdav "$root/webdav" --addr "127.0.0.1:$webdavs_port" \
        --cert "$root/tls.pem" --key "$root/tls.key" \
        --user ffs --pass ffs-webdav-secret >"$root/webdavs.log" 2>&1 &
    echo $! >"$root/webdavs.pid"

    # --- A small disk that fills up: the full-disk tests put a filler file
    # there to leave little room, copy onto it over SFTP (the same sshd,
    # the folder sftp/) and over WebDAV (a server of its own on the folder
    # webdav/), then remove the filler. A tmpfs of 2 MiB, mounted here (CI
    # runs as root); where mounting is not allowed, the variables are not
    # set, and the tests skip the full disk, or fail under CI.
    local small_ok=""
    if mount -t tmpfs -o size=2m,mode=700 ffs-small "$root/small" 2>/dev/null; then
        mkdir -p "$root/small/sftp" "$root/small/webdav"
        rclone serve webdav "$root/small/webdav" --addr "127.0.0.1:$small_webdav_port" \
            --user ffs --pass ffs-webdav-secret >"$root/webdav-small.log" 2>&1 &
        echo $! >"$root/webdav-small.pid"
        small_ok=1
    else
        echo "servers: cannot mount a tmpfs at $root/small (not root?): the full-disk tests skip"
    fi

    for port in "$webdav_port" "$webdavs_port" ${small_ok:+"$small_webdav_port"}; do
        for _ in $(seq 1 50); do
            (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
            sleep 0.2
        done
    done

    export FFSESSION_TEST_SERVERS="$root"
    export FFSESSION_TEST_SSH_BIN="$root/bin"
    export FFSESSION_TEST_SFTP="sftp://127.0.0.1/$root/sftp"
    export FFSESSION_TEST_SSHD_PID="$root/sshd.pid"
    export FFSESSION_TEST_WEBDAV="webdav://ffs@127.0.0.1:$webdav_port/store"
    export FFSESSION_TEST_WEBDAV_PASSWORD=ffs-webdav-secret
    export FFSESSION_TEST_WEBDAVS="webdavs://ffs@127.0.0.1:$webdavs_port/store"
    export FFSESSION_TEST_CA="$root/ca.pem"
    if [ -n "$small_ok" ]; then
        export FFSESSION_TEST_SMALL_DISK="$root/small"
        export FFSESSION_TEST_SFTP_SMALL="sftp://127.0.0.1/$root/small/sftp"
        export FFSESSION_TEST_WEBDAV_SMALL="webdav://ffs@127.0.0.1:$small_webdav_port/store"
    fi
    env | grep '^FFSESSION_TEST_' | sed 's/^/export /' >"$root/servers.env"
    echo "servers: sshd on 127.0.0.1:$ssh_port, WebDAV on :$webdav_port, WebDAV over HTTPS on :$webdavs_port"
}

# Garage from the Rust registry when it is missing, without the features the
# tests do not use (LMDB, metrics, K2V), and unoptimised (--debug): the
# release build measured 9-14 min on 2 cores, the debug one about 6 (340 s of CPU).
# The longest step of CI on a fresh machine, so .ci/run starts it in the
# background first (`bash .ci/servers.sh install-garage`).
ffs_garage_install() {
    set -eu
    command -v garage >/dev/null 2>&1 && return 0
    local t0=$SECONDS
    cargo install --debug --locked --quiet garage --version 2.5.0 --no-default-features \
        --features bundled-libs,sqlite
    echo "servers: garage built in $((SECONDS - t0)) s"
}

# Garage, one node, a key and the tests' buckets (after ffs_servers_main).
ffs_garage_start() {
    set -eu
    local root="$FFS_SERVERS" s3_port=31900
    ffs_garage_install
    # --- Garage, one node.
    local secret
    secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
    cat >"$root/garage.toml" <<EOF
metadata_dir = "$root/garage/meta"
data_dir = "$root/garage/data"
db_engine = "sqlite"
replication_factor = 1
rpc_bind_addr = "127.0.0.1:31901"
rpc_public_addr = "127.0.0.1:31901"
rpc_secret = "$secret"

[s3_api]
s3_region = "garage"
api_bind_addr = "127.0.0.1:$s3_port"
root_domain = ".s3.garage.localhost"

[admin]
api_bind_addr = "127.0.0.1:31903"
EOF
    local g="garage -c $root/garage.toml"
    garage -c "$root/garage.toml" server >"$root/garage.log" 2>&1 &
    echo $! >"$root/garage.pid"
    local node=""
    for _ in $(seq 1 100); do
        node=$($g node id -q 2>/dev/null | cut -d@ -f1) && [ -n "$node" ] && break
        sleep 0.2
    done
    # `node id` reads the node's key file; the commands below talk to the
    # server, which may not listen yet (an unoptimised build starts slowly).
    for _ in $(seq 1 300); do
        $g status >/dev/null 2>&1 && break
        sleep 0.2
    done
    # The S3 API can fail to listen while the rest of Garage runs (a port
    # taken: it said "Address already in use" once, when the ports were in
    # the kernel's range for outgoing connections, 32768-60999).
    for _ in $(seq 1 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$s3_port") 2>/dev/null && break
        sleep 0.2
    done
    (exec 3<>"/dev/tcp/127.0.0.1/$s3_port") 2>/dev/null || {
        echo "servers: Garage's S3 API does not listen on $s3_port"
        cat "$root/garage.log"
        return 1
    }
    $g layout assign -z dc1 -c 1G "$node" >/dev/null
    $g layout apply --version 1 >/dev/null
    $g key create ffs-key >"$root/key.txt"
    local key_id key_secret
    key_id=$(grep -i 'key id' "$root/key.txt" | head -1 | awk '{print $NF}')
    key_secret=$(grep -i 'secret key' "$root/key.txt" | head -1 | awk '{print $NF}')
    for b in ffs ffs-small ffs-small-windows ffs-bench; do
        $g bucket create "$b" >/dev/null
        $g bucket allow --read --write --owner "$b" --key ffs-key >/dev/null
    done
    # Buckets that fill up: the full-remote test, one for the Linux run and
    # one for the Windows run under Wine (the servers serve both).
    $g bucket set-quotas ffs-small --max-size 300KB >/dev/null
    $g bucket set-quotas ffs-small-windows --max-size 300KB >/dev/null

    export FFSESSION_TEST_S3_ENDPOINT="http://127.0.0.1:$s3_port"
    export FFSESSION_TEST_S3_KEY_ID="$key_id"
    export FFSESSION_TEST_S3_SECRET="$key_secret"
    export FFSESSION_TEST_S3_REGION=garage
    export FFSESSION_TEST_GARAGE_CONFIG="$root/garage.toml"
    env | grep '^FFSESSION_TEST_' | sed 's/^/export /' >"$root/servers.env"
    echo "servers: Garage S3 on 127.0.0.1:$s3_port"
}

# Stop every server of `$FFS_SERVERS` and unmount its small disk (also
# what a run killed before left).
ffs_servers_stop() {
    local root="${FFS_SERVERS:-/tmp/ffsession-servers}" p pid
    for p in "$root"/*.pid; do
        [ -f "$p" ] || continue
        pid=$(cat "$p" 2>/dev/null || true)
        [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
    done
    # The servers let go of the small disk once they are gone.
    if mountpoint -q "$root/small" 2>/dev/null; then
        for _ in $(seq 1 50); do
            umount "$root/small" 2>/dev/null && break
            sleep 0.1
        done
    fi
}

# `bash .ci/servers.sh` starts every server and prints the variables;
# `bash .ci/servers.sh install-garage` only builds Garage, `bash
# .ci/servers.sh stop` stops them (and unmounts the small disk). Sourced, it starts
# every server, or with FFS_SERVERS_LATER_GARAGE=1 all but Garage, which
# `ffs_garage_start` starts later; they stop when the sourcing shell exits.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    if [ "${1:-}" = install-garage ]; then
        ffs_garage_install
    elif [ "${1:-}" = stop ]; then
        ffs_servers_stop
    else
        ffs_servers_main
        ffs_garage_start
        cat "$FFS_SERVERS/servers.env"
    fi
else
    ffs_servers_main
    trap ffs_servers_stop EXIT
    if [ -z "${FFS_SERVERS_LATER_GARAGE:-}" ]; then
        ffs_garage_start
    fi
fi
