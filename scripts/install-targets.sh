#!/usr/bin/env bash
# Install the programs behind Assay's server and storage targets (Debian/Ubuntu):
#   postgresql (initdb, pg_ctl, postgres, pgbench), redis-server, redis-tools
#   (redis-benchmark, redis-cli), fio, and openssh-server (sshd: the SSH-cluster tests
#   start a private one on a free loopback port), chromium (the HTML report's
#   browser tests drive it through Playwright), and jq (the README's examples pipe
#   JSON through it; tests/test_readme.py runs them), etcd-server and etcd-client (the
#   etcd target: a Raft cluster), and go-ycsb (YCSB: python3 -m assay.targets ycsb),
#   built from the Go module proxy (github.com/pingcap/go-ycsb, a pinned version) with
#   the Go toolchain (Debian's golang-go when there is no go) and installed as
#   /usr/local/bin/go-ycsb (~/.local/bin/go-ycsb when not root). SQLite needs nothing:
#   it is in Python.
#
# Idempotent: when every program is already there it does nothing (no apt-get at all).
# Needs root (or passwordless sudo) only when something is missing.
#   bash scripts/install-targets.sh
set -euo pipefail

missing=()
pg_bin=""
for d in /usr/lib/postgresql/*/bin; do
    if [[ -x "$d/initdb" && -x "$d/pg_ctl" && -x "$d/postgres" ]]; then pg_bin="$d"; fi
done
if [[ -z "$pg_bin" ]] || { [[ ! -x "$pg_bin/pgbench" ]] && ! command -v pgbench >/dev/null 2>&1; }; then
    missing+=(postgresql postgresql-contrib)
fi
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v redis-benchmark >/dev/null 2>&1 || missing+=(redis-tools)
command -v fio >/dev/null 2>&1 || missing+=(fio)
[[ -x /usr/sbin/sshd ]] || missing+=(openssh-server)
[[ -x /usr/bin/chromium ]] || missing+=(chromium)
command -v jq >/dev/null 2>&1 || missing+=(jq)
# the peak-memory helper's compiler (libc6-dev: its static libc), and time -v to check it
command -v cc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
[[ -x /usr/bin/time ]] || missing+=(time)
# openssl: the warm TLS cluster's certificates (docs/clusters.md, tests/test_warm_cluster.py);
# tc (iproute2): the namespace hosts' slow link (bench/bench_cluster_ssh.py)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v tc >/dev/null 2>&1 || missing+=(iproute2)
# the etcd target (etcd, etcdctl)
command -v etcd >/dev/null 2>&1 || [[ -x /usr/bin/etcd ]] || missing+=(etcd-server)
command -v etcdctl >/dev/null 2>&1 || missing+=(etcd-client)

# go-ycsb: a pinned module version, built here from the Go module proxy (no binary
# download); the version file beside the binary names it (the ycsb driver reports it)
GO_YCSB_MODULE=github.com/pingcap/go-ycsb
GO_YCSB_VERSION=v1.0.3
if [[ $(id -u) -eq 0 ]]; then go_ycsb_bin=/usr/local/bin/go-ycsb; else go_ycsb_bin=$HOME/.local/bin/go-ycsb; fi
need_go_ycsb=0
if [[ ! -x $go_ycsb_bin || "$(cat "$go_ycsb_bin.version" 2>/dev/null)" != "$GO_YCSB_VERSION" ]]; then
    need_go_ycsb=1
    command -v go >/dev/null 2>&1 || missing+=(golang-go)
    [[ -e /usr/include/sqlite3.h ]] || missing+=(libsqlite3-dev)  # its SQLite binding (cgo)
fi

build_go_ycsb() {
    [[ $need_go_ycsb -eq 1 ]] || return 0
    echo "install-targets: building go-ycsb $GO_YCSB_VERSION from the Go module proxy (a few minutes)"
    local work
    work=$(mktemp -d)  # mode 700, a fresh name
    trap 'rm -rf "$work"' RETURN
    local src
    src=$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "$GO_YCSB_MODULE@$GO_YCSB_VERSION" \
        | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [[ -n $src && -d $src ]] || { echo "install-targets: go mod download $GO_YCSB_MODULE@$GO_YCSB_VERSION failed" >&2; return 2; }
    cp -r "$src" "$work/src"
    chmod -R u+w "$work/src"
    # its go.mod has replace directives, so it is built as the main module (go install
    # MODULE@VERSION refuses that); the tag links SQLite from libsqlite3
    (cd "$work/src" && go build -tags libsqlite3 -o "$work/go-ycsb" ./cmd/go-ycsb)
    mkdir -p "$(dirname "$go_ycsb_bin")"
    install -m 755 "$work/go-ycsb" "$go_ycsb_bin"
    echo "$GO_YCSB_VERSION" > "$go_ycsb_bin.version"
    echo "install-targets: installed $go_ycsb_bin ($GO_YCSB_MODULE $GO_YCSB_VERSION)"
}

if [[ ${#missing[@]} -eq 0 ]]; then
    build_go_ycsb
    echo "install-targets: postgresql, redis, fio, sshd, chromium, jq, gcc, time, openssl, tc, etcd and go-ycsb are installed"
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-targets: missing ${missing[*]}, and there is no apt-get here;" \
        "install these packages with your system's package manager" >&2
    exit 2
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then
        sudo=(sudo)
    else
        echo "install-targets: missing ${missing[*]}; run this script as root to install them" >&2
        exit 2
    fi
fi

echo "install-targets: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# policy-rc.d 101: the packages must not start their system-wide services (Assay starts
# private servers on free loopback ports; a system Redis would only take port 6379, a
# system sshd port 22).
policy=/usr/sbin/policy-rc.d
own_policy=0
if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
    "${sudo[@]}" chmod +x "$policy"
    own_policy=1
fi
cleanup() { if [[ $own_policy -eq 1 ]]; then "${sudo[@]}" rm -f "$policy"; fi; }
trap cleanup EXIT
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
build_go_ycsb
echo "install-targets: done"
