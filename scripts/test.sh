#!/usr/bin/env bash
# Runs every test of fairmatch: formatting, lints, unit, property and
# end-to-end tests of the `fairmatch` command, then the Slurm plugin's tests
# on a real cluster (slurmctld and four slurmd nodes on loopback).
#
# What it needs beyond a Rust toolchain (cargo, rustfmt, clippy) it
# installs itself: crates from crates.io (cached in ~/.cargo and target/),
# Debian's Slurm, clang and libclang-dev, and a configured copy of Slurm's
# source for the plugin's headers (cached in /var/cache/fairmatch); see
# scripts/slurm-deps.sh. It needs root, or sudo, for apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step ends with its wall time, so a CI log says what each part took.
step_name="" step_start=$SECONDS
step_done() {
    [ -n "$step_name" ] && printf '<== %s: %d s\n' "$step_name" $((SECONDS - step_start))
    return 0
}
step() { step_done; step_name=$*; step_start=$SECONDS; printf '\n==> %s\n' "$*"; }
trap 'step_done; printf "test.sh: %d s in all\n" $SECONDS' EXIT

for tool in cargo rustfmt cargo-clippy; do
    command -v "$tool" >/dev/null || {
        echo "error: $tool not found; install a Rust toolchain with rustfmt and clippy" >&2
        exit 1
    }
done

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (all targets, warnings are errors)"
cargo clippy --all-targets --locked -- -D warnings

step "cargo build (core only, no simulator dependencies)"
cargo build --lib --no-default-features --locked

step "cargo test"
cargo test --locked

step "the HTML report in headless Chromium (installed if missing)"
scripts/check-report.sh

step "Slurm: packages and configured source (cached after the first run)"
SLURM_SRC_DIR=$(scripts/slurm-deps.sh)
export SLURM_SRC_DIR

step "cargo clippy (the plugin layer, as built for slurmctld)"
cargo clippy --lib --no-default-features --features plugin --locked -- -D warnings

step "the SPANK plugin: clippy and its unit tests (as built for sbatch)"
CARGO_TARGET_DIR=target/spank cargo clippy --lib --no-default-features --features spank \
    --locked -- -D warnings
CARGO_TARGET_DIR=target/spank cargo test --lib --no-default-features --features spank \
    --locked -- spank::

step "build the plugin"
scripts/build-plugin.sh

step "compile the plugin against Slurm 23.11, 24.11, 25.11 and 26.05 (configured trees cached)"
# Each release's source archive is unpacked and configured once (about
# 25 s each, scripts/slurm-src.sh); each build then recompiles only this
# crate (about 20 s). The end-to-end tests below run on 22.05.
for series in 23.11 24.11 25.11 26.05; do
    scripts/build-plugin.sh "$series"
done

# Each line of a suite's output gets the seconds since the suite began,
# so a log says what each scenario took.
stamped() {
    local start=$SECONDS line
    while IFS= read -r line; do
        printf '[%5d s] %s\n' $((SECONDS - start)) "$line"
    done
}

step "Slurm end-to-end tests on a real multi-node cluster (several minutes)"
# The burst test defaults to 10,000 jobs (about 40 minutes for both
# schedulers on 2 cores); CI runs 600 of them, most of whose time is
# backfill's makespan. Set FAIRMATCH_BURST_JOBS to run more.
export FAIRMATCH_BURST_JOBS=${FAIRMATCH_BURST_JOBS:-600}
cargo test --locked --test slurm_e2e -- --ignored --test-threads=1 --nocapture --skip bench_ 2>&1 |
    stamped

# The end-to-end tests against a release built from source: its daemons
# from /opt (scripts/slurm-install.sh), the plugin built for it, and a
# plugin of another release for the refusal test.
e2e_on() {
    local series=$1 prefix=$2 other=23.11
    shift 2
    [ "$series" = 23.11 ] && other=24.11
    FAIRMATCH_SLURM_PREFIX=$prefix FAIRMATCH_PLUGIN_DIR=$PWD/target/plugin/$series \
        FAIRMATCH_OTHER_PLUGIN_DIR=$PWD/target/plugin/$other \
        PATH="$prefix/sbin:$prefix/bin:$PATH" \
        cargo test --locked --test slurm_e2e -- --ignored --test-threads=1 --nocapture "$@" 2>&1 |
        stamped
}

step "Slurm 26.05: daemons built from source (cached), then the whole suite"
# Building 26.05 takes about 10 minutes on 2 cores the first time (then it
# is cached in /opt). The suite is the one 22.05 runs; the burst runs
# 1,000 jobs here, and the reliability scenarios skip their backfill half
# (22.05's run compares them with backfill), as does the preemption
# scenario (26.05 requeues through another call, so it runs here too); the
# waiting-bound scenario, the controller crashes during a preemption, the
# side-by-side table (5 minutes, backfill then fairmatch), the digital
# twin (3 minutes: it checks the simulator's prediction against a real
# cluster, and 22.05's serves) and the multi-node scenario with its twin
# (gangs on 26.05 are checked by gpu_requests, which also makes the
# multi-node scenario beside fairmatch's stream and the typed-GPU table,
# both policy-only, 22.05's alone; so are the start times beside
# backfill's, while the hint options run on both), and the gang preemption scenarios
# (26.05's requeue is the one-slot preemption scenario's) run on 22.05
# only, to keep the run near its hour; so do the QOS and partition-tier
# scenarios and the two fair-share ones (each needs its cluster twice,
# and three of them slurmdbd; fair tree also waits for Slurm's next
# ranking, a minute), while an admin's priority and the
# learned state across restarts run on both.
prefix=$(scripts/slurm-install.sh 26.05)
FAIRMATCH_BURST_JOBS=1000 FAIRMATCH_SKIP_REFERENCE=1 e2e_on 26.05 "$prefix" --skip bench_ \
    --skip g_a_long_job --skip w_a_controller_killed --skip f_side_by_side \
    --skip c_digital_twin --skip multi_node_jobs_beside_backfill \
    --skip gang_preemption:: --skip j_a_multi_node_job_is_not_starved \
    --skip typed_gpus:: --skip start_times:: \
    --skip y_jobs_of_a_higher_qos --skip z_jobs_of_a_higher_partition \
    --skip u_an_account_that_used --skip u_fair_tree

step "Slurm's own test suite on 26.05: the quick selection, under backfill then fairmatch"
# SchedMD's testsuite/python from the 24.11 source archive, the modules
# marked quick in scripts/slurm-testsuite.modules; fails when a case that
# passes under backfill does not under fairmatch. The whole selection:
# scripts/slurm-testsuite.sh (docs/operations.md).
scripts/slurm-testsuite.sh --quick

step "Slurm 23.11, 24.11, 25.11: smoke tests where their daemons are built"
# Device choice, the motivation case, slurmctld restarts, a multi-node job
# beside fairmatch's stream (against backfill on the same cluster) and a
# mismatched plugin refused. Building each release's daemons takes about
# 10 minutes the first time, more than a fresh machine's CI can spend on
# three of them: a release whose daemons are not in /opt is compiled
# against only (above), unless FAIRMATCH_BUILD_RELEASES=1 builds it.
smoke=(a_device_choice_follows_the_hint b_allox_motivation_case
    reliability::q_every_job_completes_once_across_controller_restarts
    shared_cluster::j_a_multi_node_job_is_not_starved
    versions::u_a_plugin_built_for_another_release_is_refused)
for series in 23.11 24.11 25.11; do
    tree=$(scripts/slurm-src.sh "$series")
    prefix=/opt/$(basename "$(dirname "$tree")")
    if [ -z "${FAIRMATCH_BUILD_RELEASES:-}" ] && [ ! -x "$prefix/sbin/slurmctld" ]; then
        echo "Slurm $series: daemons not built; compiled against only (scripts/slurm-install.sh $series builds them)"
        continue
    fi
    prefix=$(scripts/slurm-install.sh "$series")
    echo "Slurm $series: smoke tests"
    FAIRMATCH_SKIP_REFERENCE=1 e2e_on "$series" "$prefix" --exact "${smoke[@]}"
done
