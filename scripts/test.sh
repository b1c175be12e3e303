#!/usr/bin/env bash
# Runs every test of the workspace on a fresh machine: installs prerequisites (scripts/setup.sh), builds
# every target, then runs the whole suite (unit tests, the store conformance suite on memory/redb/etcd,
# and the e2e tests that drive the real kcp-shard binary with kubectl and kube-rs on both stores).
# Uses cargo-nextest when installed, else cargo test. Exits non-zero on any failure.
set -euo pipefail

cd "$(dirname "$0")/.."

scripts/setup.sh

# A disk that fills up midway fails the suite in confusing places (etcd cannot create its WAL, redb
# cannot write): say how much room there is, and when it is short give back what a build makes
# again (the incremental caches, ~2 GiB) before building.
avail_kib=$(df -Pk . | awk 'NR==2 {print $4}')
echo "test: $((avail_kib / 1024)) MiB free on the build's disk"
if [ "${avail_kib:-0}" -lt $((10 * 1024 * 1024)) ]; then
    echo "test: less than 10 GiB free; removing target/*/incremental"
    rm -rf target/debug/incremental target/release/incremental
fi

echo "test: cargo build --workspace --all-targets"
cargo build --workspace --all-targets

if cargo nextest --version >/dev/null 2>&1; then
    # nextest does not run doctests; run them first so the suite's summary line closes the output.
    echo "test: cargo test --workspace --doc"
    cargo test --workspace --doc
    echo "test: cargo nextest run --workspace"
    cargo nextest run --workspace --no-fail-fast "$@"
else
    echo "test: cargo test --workspace"
    cargo test --workspace --no-fail-fast "$@"
fi
