#!/usr/bin/env bash
# Where slurmctld's CPU goes under fairmatch: runs the plugin bench
# (scripts/bench-plugin.sh, fairmatch only) and records slurmctld with
# `perf` during its window, then prints the functions by inclusive share.
#
#   scripts/profile-slurmctld.sh [RECORD_SECONDS [DELAY_SECONDS]]   defaults: 30 45
#   FAIRMATCH_BENCH_SPREAD=0.5 scripts/profile-slurmctld.sh          (any bench variable passes through)
#   FAIRMATCH_BENCH_ONLY=backfill scripts/profile-slurmctld.sh       (profile backfill instead)
#
# DELAY_SECONDS is how long after the bench starts recording begins: past
# the build, the cluster's start and the 5,000 submissions (about 12 s of
# sbatch), so the record falls in the measured window. Needs `perf`
# (Debian: linux-perf) and root or kernel.perf_event_paranoid <= 1. The
# data stays in $PROFILE_OUT (default /tmp/fairmatch-slurmctld.perf).
set -euo pipefail
cd "$(dirname "$0")/.."
record=${1:-30}
delay=${2:-45}
out=${PROFILE_OUT:-/tmp/fairmatch-slurmctld.perf}
if ! command -v perf >/dev/null; then
    echo "profile-slurmctld: perf is not installed (Debian: apt-get install linux-perf)" >&2
    exit 2
fi
export FAIRMATCH_BENCH_ONLY=${FAIRMATCH_BENCH_ONLY:-fairmatch}
log=$(mktemp /tmp/fairmatch-profile-bench.XXXXXX)
scripts/bench-plugin.sh 5000 $((delay + record)) >"$log" 2>&1 &
bench=$!
trap 'kill $bench 2>/dev/null || true' EXIT
sleep "$delay"
# The bench's slurmctld runs with a config under /tmp/fairmatch-slurm-*.
pid=$(pgrep -f 'slurmctld -f /tmp/fairmatch-slurm-' | tail -1 || true)
if [ -z "$pid" ]; then
    echo "profile-slurmctld: no bench slurmctld after ${delay} s; bench log: $log" >&2
    exit 1
fi
perf record -F 999 -g -p "$pid" -o "$out" -- sleep "$record" 2>/dev/null
wait $bench || { echo "profile-slurmctld: the bench failed; log: $log" >&2; exit 1; }
trap - EXIT
grep -E '^\|' "$log" || true
echo
echo "slurmctld, $record s of the window, share of its samples (inclusive):"
perf report -i "$out" --children --sort sym --stdio -g none 2>/dev/null |
    grep -E '^ +[0-9]' | head -"${PROFILE_TOP:-40}"
