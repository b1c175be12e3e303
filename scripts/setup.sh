#!/usr/bin/env bash
# Installs what building and testing kcp-rs needs on a fresh Debian/Ubuntu machine, skipping whatever is
# already there: etcd (Debian's etcd-server, for the etcd store and its tests), protoc with its well-known
# types, curl, openssl; kubectl must be present.
# A Rust toolchain (rustup, stable >= 1.89) must already be installed.
set -euo pipefail

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

missing=()
command -v etcd >/dev/null 2>&1 || [ -x /usr/bin/etcd ] || missing+=(etcd-server)
command -v protoc >/dev/null 2>&1 || missing+=(protobuf-compiler)
# protoc's well-known types (google/protobuf/*.proto), which etcd-client's protos import; Debian only
# recommends them with protobuf-compiler, and recommendations are not installed here.
[ -f /usr/include/google/protobuf/descriptor.proto ] || missing+=(libprotobuf-dev)
command -v curl >/dev/null 2>&1 || missing+=(curl)
# e2e/tests/client_certificates.rs makes client certificates as people do by hand.
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v diff >/dev/null 2>&1 || missing+=(diffutils)
# apigen names schemas after the git commit of its input; e2e/tests/apis_cli.rs and apigen's tests commit CRDs.
command -v git >/dev/null 2>&1 || missing+=(git)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
python3 -m venv --help >/dev/null 2>&1 || missing+=(python3-venv)

if [ "${#missing[@]}" -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    as_root apt-get update
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" ca-certificates
fi

# kubectl (v1.32) ships with the machines this project runs on; the e2e tests drive the real one.
if ! command -v kubectl >/dev/null 2>&1; then
    echo "setup: kubectl not found; install kubectl v1.32 and put it on the PATH" >&2
    exit 1
fi

if ! command -v cargo >/dev/null 2>&1; then
    echo "setup: cargo not found; install Rust with https://rustup.rs (stable, >= 1.89)" >&2
    exit 1
fi

# The official Kubernetes Python client, for the e2e test that drives the shard with it (the test
# creates this venv itself when it is missing; doing it here keeps the test run offline).
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$repo/target/e2e-python"
if ! "$venv/bin/python" -c 'import kubernetes' >/dev/null 2>&1; then
    echo "setup: creating $venv with the Kubernetes Python client"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$repo/e2e/python/requirements.txt"
fi
