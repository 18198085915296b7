#!/usr/bin/env bash
# Installs what the Slurm plugin and its tests need, and prints the path of
# a configured Slurm source tree matching the installed Slurm (for
# SLURM_SRC_DIR). Safe to run again: installed packages and the configured
# tree (cached under $FAIRMATCH_CACHE, default /var/cache/fairmatch) are
# reused.
#
# Debian packages: slurmctld, slurmd, slurm-client, slurmdbd and
# mariadb-server (the tests start their own instances; never
# slurm-wlm-emulator: it switches slurmctld to a front-end build that
# refuses a normal config), clang and libclang-dev for bindgen, dpkg-dev
# for dpkg-source.
set -euo pipefail
cache=${FAIRMATCH_CACHE:-/var/cache/fairmatch}
log() { echo "slurm-deps: $*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

packages=(slurmctld slurmd slurm-client slurmdbd mariadb-server clang libclang-dev dpkg-dev)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if dpkg-query -W -f='${Status}' slurm-wlm-emulator 2>/dev/null | grep -q "install ok installed"; then
    log "slurm-wlm-emulator is installed; it breaks a normal slurmctld. Remove it first."
    exit 1
fi
if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    as_root apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q --no-install-recommends \
        "${missing[@]}" >&2
fi

version=$(dpkg-query -W -f='${Version}' slurmctld)
tree="$cache/slurm-$version"
if [ ! -f "$tree/src/config.h" ]; then
    log "fetching and configuring Slurm $version source (cached in $tree)"
    sources=/etc/apt/sources.list.d/fairmatch-deb-src.sources
    if ! apt-get source --print-uris -q "slurm-wlm=$version" >/dev/null 2>&1; then
        # A deb-src twin of Debian's main entry.
        main=/etc/apt/sources.list.d/debian.sources
        [ -f "$main" ] || { log "no $main to derive a deb-src entry from"; exit 1; }
        sed -e 's/^Types: deb$/Types: deb-src/' "$main" | as_root tee "$sources" >/dev/null
        as_root apt-get update -q >&2
    fi
    rm -rf "$tree"
    as_root mkdir -p "$tree"
    as_root chown "$(id -u)" "$tree"
    (cd "$tree" && apt-get source --download-only -q "slurm-wlm=$version" >&2 &&
        dpkg-source -x ./*.dsc src >&2)
    (cd "$tree/src" && ./configure --sysconfdir=/etc/slurm --enable-multiple-slurmd \
        --disable-debug --without-rpath --without-munge >"$tree/configure.log" 2>&1) ||
        { log "configure failed; see $tree/configure.log"; exit 1; }
fi
echo "$tree/src"
