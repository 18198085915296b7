#!/usr/bin/env bash
# Prints the path of a configured Slurm source tree of the given release
# series, for SLURM_SRC_DIR:
#
#   scripts/slurm-src.sh 22.05|23.11|24.11|25.11|26.05
#
# 22.05 is Debian 12's own Slurm (scripts/slurm-deps.sh). The others come
# from SchedMD's release archives in $FAIRMATCH_SLURM_TARBALLS (default: the
# first of /work/shared/slurm-src and ../shared/slurm-src beside the repo
# that exists), checked against its SHA256SUMS, unpacked and configured
# under $FAIRMATCH_CACHE (default /var/cache/fairmatch) once; later runs
# reuse the tree. `./configure` alone takes about a minute and is all the
# shim needs to compile.
set -euo pipefail
cd "$(dirname "$0")/.."
series=${1:?usage: scripts/slurm-src.sh 22.05|23.11|24.11|25.11|26.05}
cache=${FAIRMATCH_CACHE:-/var/cache/fairmatch}
log() { echo "slurm-src: $*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if [ "$series" = 22.05 ]; then
    exec scripts/slurm-deps.sh
fi

tarballs=${FAIRMATCH_SLURM_TARBALLS:-}
if [ -z "$tarballs" ]; then
    for d in /work/shared/slurm-src "$PWD/../shared/slurm-src"; do
        [ -d "$d" ] && { tarballs=$d; break; }
    done
fi
[ -n "$tarballs" ] && [ -d "$tarballs" ] ||
    { log "no Slurm source archives: set FAIRMATCH_SLURM_TARBALLS"; exit 1; }
archive=$(ls "$tarballs"/slurm-"$series".*.tar.xz 2>/dev/null | sort -V | tail -1)
[ -n "$archive" ] || { log "no slurm-$series.*.tar.xz in $tarballs"; exit 1; }
name=$(basename "$archive" .tar.xz)
tree="$cache/$name"
# MariaDB's client headers give slurmdbd its accounting_storage/mysql
# plugin, which the QOS end-to-end test needs; json-c gives the commands
# their --json output (serializer/json), which Slurm's own test suite
# needs (scripts/slurm-testsuite.sh).
if ! command -v mariadb_config >/dev/null || [ ! -f /usr/include/json-c/json.h ]; then
    log "installing libmariadb-dev and libjson-c-dev (accounting storage, --json)"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        libmariadb-dev libjson-c-dev >&2
fi
if [ ! -f "$tree/src/config.h" ] || [ ! -f "$tree/src/slurm/slurm_version.h" ] ||
    ! grep -q '^#define HAVE_MYSQL 1' "$tree/src/config.h" ||
    ! grep -q '^#define HAVE_JSON 1' "$tree/src/config.h"; then
    if [ -f "$tarballs/SHA256SUMS" ]; then
        want=$(awk -v f="$(basename "$archive")" '$2 == f || $2 == "*"f {print $1}' "$tarballs/SHA256SUMS")
        have=$(sha256sum "$archive" | awk '{print $1}')
        [ -z "$want" ] || [ "$want" = "$have" ] ||
            { log "$archive does not match SHA256SUMS"; exit 1; }
    fi
    log "unpacking and configuring $name (cached in $tree)"
    as_root mkdir -p "$tree"
    as_root chown "$(id -u)" "$tree"
    rm -rf "$tree/src" "$tree/unpack"
    mkdir -p "$tree/unpack"
    tar -C "$tree/unpack" -xJf "$archive"
    mv "$tree/unpack"/* "$tree/src"
    rmdir "$tree/unpack"
    (cd "$tree/src" && ./configure --prefix="/opt/$name" --sysconfdir="/etc/$name" \
        --enable-multiple-slurmd --disable-debug --without-rpath --without-munge \
        >"$tree/configure.log" 2>&1) ||
        { log "configure failed; see $tree/configure.log"; exit 1; }
fi
echo "$tree/src"
