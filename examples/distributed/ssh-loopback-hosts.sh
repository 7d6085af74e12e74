#!/usr/bin/env bash
# Five "hosts" on this machine for the multi-host examples: a private sshd listening on
# 127.0.0.1 to 127.0.0.5 (Linux routes all of 127/8 to loopback; HOSTS=6 adds
# 127.0.0.6, as the etcd example's five members and a client need), accepting
# one key made here, for the current user.  Dask's SSH cluster then starts one worker per
# address, as it would on five machines.
#   bash examples/distributed/ssh-loopback-hosts.sh [DIR] [PORT]   # start
#   kill "$(cat ~/.cache/assay/ssh-loopback/sshd.pid)"              # stop
# DIR (default ~/.cache/assay/ssh-loopback, in the home folder of the user running it)
# is made private (mode 700) or must already be a folder of that user's own that nobody
# else may enter: it holds the key that logs in as that user (root, run as root). sshd
# checks that no other user can change the path to its keys (StrictModes), so DIR
# cannot lie under /tmp. The keys are made afresh on every start: none found there is
# trusted.
set -euo pipefail
home=$(getent passwd "$(id -u)" | cut -d: -f6)  # not $HOME, which sudo may keep
dir=${1:-$home/.cache/assay/ssh-loopback}
port=${2:-2222}
hosts=${HOSTS:-5}
case $hosts in
    [1-9]) ;;
    *) echo "HOSTS must be a number from 1 to 9 (127.0.0.1 to 127.0.0.HOSTS)" >&2; exit 1 ;;
esac
addresses=$(seq -f '127.0.0.%g' 1 "$hosts")
sshd=/usr/sbin/sshd
[ -x "$sshd" ] || { echo "no $sshd: run scripts/install-targets.sh (openssh-server)" >&2; exit 1; }
. "$(dirname -- "${BASH_SOURCE[0]}")/../../scripts/private-dir.sh"
case $dir in
    *[[:space:][:cntrl:]]*) echo "DIR must not hold spaces or control characters (it goes into sshd_config)" >&2; exit 1 ;;
esac
# sshd's StrictModes refuses keys below a folder others can change: say so before it
# starts (every folder above DIR owned by root or this user, not writable by others)
up=$(dirname -- "$dir")
while [ ! -e "$up" ]; do up=$(dirname -- "$up"); done
up=$(cd -- "$up" && pwd -P)
while :; do
    read -r owner mode < <(stat -c '%u %a' -- "$up")
    if { [ "$owner" != 0 ] && [ "$owner" != "$(id -u)" ]; } || (( 8#$mode & 8#022 )); then
        echo "$up (owner uid $owner, mode $mode) can be changed by other users: sshd" \
            "(StrictModes) refuses keys below it; name a folder in your home (the default)" >&2
        exit 1
    fi
    [ "$up" = / ] && break
    up=$(dirname -- "$up")
done
private_dir "$dir" || exit 1
if [ -f "$dir/sshd.pid" ] && kill -0 "$(cat "$dir/sshd.pid")" 2> /dev/null; then
    echo "an sshd of $dir already runs (pid $(cat "$dir/sshd.pid")): stop it first" >&2
    exit 1
fi
umask 077
rm -f -- "$dir"/host_key "$dir"/host_key.pub "$dir"/client_key "$dir"/client_key.pub \
    "$dir"/authorized_keys "$dir"/known_hosts "$dir"/sshd_config "$dir"/sshd.pid
for name in host_key client_key; do
    ssh-keygen -q -t ed25519 -N "" -f "$dir/$name"
done
cp "$dir/client_key.pub" "$dir/authorized_keys"
read -r kind key _ < "$dir/host_key.pub"
: > "$dir/known_hosts"
for a in $addresses; do
    echo "[$a]:$port $kind $key" >> "$dir/known_hosts"
done
cat > "$dir/sshd_config" <<CONF
Port $port
$(for a in $addresses; do echo "ListenAddress $a"; done)
HostKey $dir/host_key
AuthorizedKeysFile $dir/authorized_keys
PidFile $dir/sshd.pid
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes yes
CONF
if [ "$(id -u)" = 0 ]; then mkdir -p /run/sshd; fi  # the privilege-separation folder
# -D (not daemon(3), which needs /dev/null a container may lack), detached from this shell
setsid "$sshd" -D -f "$dir/sshd_config" -E "$dir/sshd.log" < /dev/null > /dev/null 2>&1 &
echo $! > "$dir/sshd.pid"
for _ in $(seq 100); do
    (echo > "/dev/tcp/127.0.0.$hosts/$port") 2> /dev/null && break
    sleep 0.05
done
echo "sshd on 127.0.0.1-$hosts port $port (key $dir/client_key, known hosts $dir/known_hosts)"
