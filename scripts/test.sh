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

step() { printf '\n==> %s\n' "$*"; }

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

step "Slurm: packages and configured source (cached after the first run)"
SLURM_SRC_DIR=$(scripts/slurm-deps.sh)
export SLURM_SRC_DIR

step "cargo clippy (the plugin layer, as built for slurmctld)"
cargo clippy --lib --no-default-features --features plugin --locked -- -D warnings

step "build the plugin"
scripts/build-plugin.sh

step "compile the plugin against Slurm 23.11, 24.11, 25.11 and 26.05 (configured trees cached)"
# Each release's source archive is unpacked and configured once (about
# 25 s each, scripts/slurm-src.sh); each build then recompiles only this
# crate (about 20 s). The end-to-end tests below run on 22.05.
for series in 23.11 24.11 25.11 26.05; do
    scripts/build-plugin.sh "$series"
done

step "Slurm end-to-end tests on a real multi-node cluster (several minutes)"
# The burst test defaults to 10,000 jobs (about 40 minutes for both
# schedulers on 2 cores); CI runs 2,000 of them. Set FAIRMATCH_BURST_JOBS
# to run more.
export FAIRMATCH_BURST_JOBS=${FAIRMATCH_BURST_JOBS:-2000}
cargo test --locked --test slurm_e2e -- --ignored --test-threads=1 --nocapture --skip bench_
