#!/usr/bin/env bash
# The plugin beside sched/backfill under a busy queue, on the same 16-node
# test cluster, one after the other: jobs completed per minute, slurmctld's
# CPU, and the time each fairmatch cycle holds slurmctld's locks. Prints a
# markdown table (see tests/slurm_e2e/bench.rs for what is measured).
#
#   scripts/bench-plugin.sh [JOBS [WINDOW_SECONDS]]     defaults: 5000 60
#   FAIRMATCH_BENCH_CONF="MaxCandidates=200" scripts/bench-plugin.sh   (fairmatch.conf text)
#   FAIRMATCH_BENCH_ONLY=fairmatch scripts/bench-plugin.sh              (one scheduler only)
#   FAIRMATCH_BENCH_SPREAD=0.5 scripts/bench-plugin.sh                 (run times 1 s +- 0.5 s: a stream, not waves)
#
# Needs what scripts/test.sh installs (Debian's Slurm and its configured
# source). Takes about (submission + window) x 2: some 5 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
export FAIRMATCH_BENCH_JOBS=${1:-5000}
export FAIRMATCH_BENCH_WINDOW=${2:-60}
SLURM_SRC_DIR=$(scripts/slurm-deps.sh)
export SLURM_SRC_DIR
scripts/build-plugin.sh >/dev/null
cargo test --locked --release --test slurm_e2e -- --ignored --exact --nocapture \
    bench::bench_plugin_throughput_against_backfill
