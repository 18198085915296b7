#!/usr/bin/env bash
# Builds the Slurm plugins: target/plugin/sched_fairmatch.so, and
# target/plugin/spank_fairmatch.so, which adds the hint options to sbatch,
# salloc and srun (plugstack.conf: docs/operations.md).
#
#   SLURM_SRC_DIR=/path/to/configured/slurm scripts/build-plugin.sh
#   scripts/build-plugin.sh 24.11     # target/plugin/24.11/sched_fairmatch.so
#
# With a release series (22.05, 23.11, 24.11, 25.11, 26.05) the plugin is
# built against that release's configured tree (scripts/slurm-src.sh), in
# a target directory of its own, and lands in target/plugin/SERIES/.
#
# SLURM_SRC_DIR must be the source of the Slurm that will load the plugin,
# configured (./configure has produced config.h): the shim reads
# slurmctld's internal structs, which change between versions. Without it,
# scripts/slurm-deps.sh installs Debian's Slurm and prepares its source.
set -euo pipefail
cd "$(dirname "$0")/.."
series=${1:-}
out=target/plugin
if [ -n "$series" ]; then
    SLURM_SRC_DIR=$(scripts/slurm-src.sh "$series")
    # One directory for the whole matrix: a new tree rebuilds only this
    # crate, not its dependencies.
    export CARGO_TARGET_DIR=target/slurm-matrix
    out=target/plugin/$series
elif [ -z "${SLURM_SRC_DIR:-}" ]; then
    SLURM_SRC_DIR=$(scripts/slurm-deps.sh)
fi
export SLURM_SRC_DIR
target=${CARGO_TARGET_DIR:-target}
# Lazy binding, as Slurm's own plugins and its RTLD_LAZY dlopen() expect:
# with rustc's default -z now, a plugin built for another release fails
# dlopen() on the first function that release lacks, before
# c_shim/fm_loaded_by.c can say which releases differ. (A link argument
# here, not in build.rs: only this build makes a cdylib.)
cargo rustc --release --locked --lib --crate-type cdylib \
    --no-default-features --features plugin -- -C link-arg=-Wl,-z,lazy
# Slurm's own symbols resolve inside slurmctld; ours must all be defined
# here, or dlopen() refuses the plugin at start-up.
missing=$(nm -D --undefined-only "$target/release/libfairmatch.so" | awk '{print $2}' |
    grep -E '^(fm_|fairmatch_)' || true)
if [ -n "$missing" ]; then
    echo "error: the plugin leaves its own symbols undefined: $missing" >&2
    exit 1
fi
# Slurm's error() must resolve in libslurm; bound to glibc's error(3) it
# would exit any host whose libslurm does not come first.
if nm -D --undefined-only "$target/release/libfairmatch.so" | grep -q ' error@GLIBC'; then
    echo "error: the plugin calls glibc's error(3) instead of Slurm's error()" >&2
    exit 1
fi
mkdir -p "$out"
# A new inode: a slurmctld still running the old file keeps its mapping.
cp "$target/release/libfairmatch.so" "$out/sched_fairmatch.so.new"
mv -f "$out/sched_fairmatch.so.new" "$out/sched_fairmatch.so"
# The SPANK plugin is a cdylib of its own (another plugin_type), in a
# target directory of its own so that neither build undoes the other.
CARGO_TARGET_DIR=$target/spank cargo rustc --release --locked --lib --crate-type cdylib \
    --no-default-features --features spank -- -C link-arg=-Wl,-z,lazy
cp "$target/spank/release/libfairmatch.so" "$out/spank_fairmatch.so.new"
mv -f "$out/spank_fairmatch.so.new" "$out/spank_fairmatch.so"
echo "$out/sched_fairmatch.so"
