#!/usr/bin/env bash
# Runs every test of the workspace on a fresh machine: installs prerequisites (scripts/setup.sh), builds
# every target, then runs the whole suite (unit tests, the store conformance suite on memory/redb/etcd,
# and the e2e tests that drive the real kcp-shard binary with kubectl and kube-rs on both stores).
# Uses cargo-nextest when installed, else cargo test. Exits non-zero on any failure.
set -euo pipefail

cd "$(dirname "$0")/.."

scripts/setup.sh

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
