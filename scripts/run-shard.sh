#!/usr/bin/env bash
# Runs a kcp-rs shard on the embedded store: installs prerequisites, builds kcp-shard (release) and starts
# it with its state in .kcp/ (override with KCP_ROOT). Extra arguments go to kcp-shard, e.g.
# `scripts/run-shard.sh --secure-port 7443` or `--etcd-servers http://127.0.0.1:2379`.
# Once it is up:  export KUBECONFIG=.kcp/admin.kubeconfig; kubectl get ns
set -euo pipefail

cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release -p kcp-shard
exec target/release/kcp-shard start --root-directory "${KCP_ROOT:-.kcp}" "$@"
