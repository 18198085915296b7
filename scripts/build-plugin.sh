#!/usr/bin/env bash
# Builds the Slurm plugin: target/plugin/sched_fairmatch.so.
#
#   SLURM_SRC_DIR=/path/to/configured/slurm scripts/build-plugin.sh
#
# SLURM_SRC_DIR must be the source of the Slurm that will load the plugin,
# configured (./configure has produced config.h): the shim reads
# slurmctld's internal structs, which change between versions. Without it,
# scripts/slurm-deps.sh installs Debian's Slurm and prepares its source.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${SLURM_SRC_DIR:-}" ]; then
    SLURM_SRC_DIR=$(scripts/slurm-deps.sh)
fi
export SLURM_SRC_DIR
cargo rustc --release --locked --lib --crate-type cdylib \
    --no-default-features --features plugin
# Slurm's own symbols resolve inside slurmctld; ours must all be defined
# here, or dlopen() refuses the plugin at start-up.
missing=$(nm -D --undefined-only target/release/libfairmatch.so | awk '{print $2}' |
    grep -E '^(fm_|fairmatch_)' || true)
if [ -n "$missing" ]; then
    echo "error: the plugin leaves its own symbols undefined: $missing" >&2
    exit 1
fi
mkdir -p target/plugin
# A new inode: a slurmctld still running the old file keeps its mapping.
cp target/release/libfairmatch.so target/plugin/sched_fairmatch.so.new
mv -f target/plugin/sched_fairmatch.so.new target/plugin/sched_fairmatch.so
echo "target/plugin/sched_fairmatch.so"
