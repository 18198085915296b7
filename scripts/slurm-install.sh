#!/usr/bin/env bash
# Builds and installs the daemons and commands of a Slurm release from its
# configured tree (scripts/slurm-src.sh) into /opt/slurm-X.Y.Z, once, and
# prints that prefix. For running the end-to-end tests on releases Debian
# does not ship:
#
#   prefix=$(scripts/slurm-install.sh 26.05)
#   FAIRMATCH_SLURM_PREFIX=$prefix FAIRMATCH_PLUGIN_DIR=target/plugin/26.05 \
#       cargo test --test slurm_e2e -- --ignored ...
#
# `make -j2` and install take about 9 minutes on 2 cores the first time; later runs
# reuse the installed prefix.
set -euo pipefail
cd "$(dirname "$0")/.."
series=${1:?usage: scripts/slurm-install.sh 23.11|24.11|25.11|26.05}
log() { echo "slurm-install: $*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

tree=$(scripts/slurm-src.sh "$series")
name=$(basename "$(dirname "$tree")")
prefix=/opt/$name
if [ ! -x "$prefix/sbin/slurmctld" ] || [ ! -f "$prefix/lib/slurm/sched_backfill.so" ] ||
    [ ! -f "$prefix/lib/slurm/accounting_storage_mysql.so" ] ||
    [ ! -f "$prefix/lib/slurm/serializer_json.so" ]; then
    log "building $name (make -j2, about 9 minutes the first time; log in $tree/../build.log)"
    (cd "$tree" && make -j2 >"$tree/../build.log" 2>&1) ||
        { log "make failed; see $tree/../build.log"; exit 1; }
    as_root mkdir -p "$prefix"
    (cd "$tree" && as_root make install >"$tree/../install.log" 2>&1) ||
        { log "make install failed; see $tree/../install.log"; exit 1; }
fi
echo "$prefix"
