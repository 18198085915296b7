#!/usr/bin/env bash
# Runs the same submitted workload (the AlloX testbed: 40 jobs, 4 users,
# submitted with -p cpu,gpu) on the same emulated cluster twice, once under
# stock sched/backfill and once under sched/fairmatch, and prints average
# and per-user JCT.
#
#   scripts/side-by-side.sh [SCALE]    SCALE: time scale, default 1/64
set -euo pipefail
cd "$(dirname "$0")/.."
SLURM_SRC_DIR=$(scripts/slurm-deps.sh)
export SLURM_SRC_DIR
scripts/build-plugin.sh >/dev/null
export FAIRMATCH_SIDE_SCALE=${1:-0.015625}
cargo test --locked --test slurm_e2e f_side_by_side -- --ignored --nocapture 2>&1 |
    sed -n '/^Side by side/,/^$/p'
