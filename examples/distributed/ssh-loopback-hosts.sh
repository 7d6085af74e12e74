#!/usr/bin/env bash
# Five "hosts" on this machine for the multi-host examples: a private sshd listening on
# 127.0.0.1 to 127.0.0.5 (Linux routes all of 127/8 to loopback), accepting
# one key made here, for the current user.  Dask's SSH cluster then starts one worker per
# address, as it would on five machines.
#   bash examples/distributed/ssh-loopback-hosts.sh [DIR] [PORT]   # start (default /tmp/assay-ssh 2222)
#   kill "$(cat /tmp/assay-ssh/sshd.pid)"                          # stop
set -euo pipefail
dir=${1:-/tmp/assay-ssh}
port=${2:-2222}
sshd=/usr/sbin/sshd
[ -x "$sshd" ] || { echo "no $sshd: run scripts/install-targets.sh (openssh-server)" >&2; exit 1; }
mkdir -p "$dir"
chmod 700 "$dir"
for name in host_key client_key; do
    [ -f "$dir/$name" ] || ssh-keygen -q -t ed25519 -N "" -f "$dir/$name"
done
cp "$dir/client_key.pub" "$dir/authorized_keys"
read -r kind key _ < "$dir/host_key.pub"
: > "$dir/known_hosts"
for a in 127.0.0.1 127.0.0.2 127.0.0.3 127.0.0.4 127.0.0.5; do
    echo "[$a]:$port $kind $key" >> "$dir/known_hosts"
done
cat > "$dir/sshd_config" <<CONF
Port $port
ListenAddress 127.0.0.1
ListenAddress 127.0.0.2
ListenAddress 127.0.0.3
ListenAddress 127.0.0.4
ListenAddress 127.0.0.5
HostKey $dir/host_key
AuthorizedKeysFile $dir/authorized_keys
PidFile $dir/sshd.pid
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
CONF
if [ "$(id -u)" = 0 ]; then mkdir -p /run/sshd; fi  # the privilege-separation folder
# -D (not daemon(3), which needs /dev/null a container may lack), detached from this shell
setsid "$sshd" -D -f "$dir/sshd_config" -E "$dir/sshd.log" < /dev/null > /dev/null 2>&1 &
echo $! > "$dir/sshd.pid"
for _ in $(seq 100); do
    (echo > "/dev/tcp/127.0.0.5/$port") 2> /dev/null && break
    sleep 0.05
done
echo "sshd on 127.0.0.1-5 port $port (key $dir/client_key, known hosts $dir/known_hosts)"
