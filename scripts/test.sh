#!/usr/bin/env bash
# Runs every test of fairmatch: formatting, lints, unit, property and
# end-to-end tests of the `fairmatch` command.
#
# What it needs beyond a Rust toolchain (cargo, rustfmt, clippy) it fetches
# itself: crates from crates.io, cached by cargo in ~/.cargo and target/.
# The Slurm plugin tests (a real multi-node cluster) join this script with
# the plugin itself; see issue 3 in ARCHITECTURE.md.
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
