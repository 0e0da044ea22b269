#!/usr/bin/env bash
# Starts a one-node Slurm cluster on this machine for cairn's Slurm tests:
# munged, slurmctld and slurmd, run by hand (no systemd), everything in one
# scratch folder, with two fake GPUs (character devices, see below).
#
#   eval "$(scripts/slurm-up.sh [DIR])"    # prints the environment to use
#   ... go test ./engine/executor/slurm/ ...
#   scripts/slurm-down.sh DIR
#
# DIR defaults to a new folder under /tmp. The script installs Debian's
# slurm-wlm and munge when they are missing (it needs root for that, for
# munged's user and for the device files), picks free ports so that two
# clusters can run side by side, and waits, under timeouts, until the node
# is idle. It writes DIR/env (the exports it prints: SLURM_CONF,
# CAIRN_SLURM_TEST=1, CAIRN_SLURM_DIR) and the daemons' pid files in DIR.
# On failure it stops what it started and prints the daemons' logs.
set -euo pipefail

dir=${1:-}
if [ -z "$dir" ]; then
	dir=$(mktemp -d /tmp/cairn-slurm.XXXXXX)
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
# munged (as the munge user) and the jobs must reach the folder: mktemp -d
# makes it 0700.
chmod 0755 "$dir"

log() { echo "slurm-up: $*" >&2; }

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
	log "installing slurm-wlm and munge"
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y -q slurm-wlm munge >"$dir/apt.log" 2>&1; then
		apt-get update -q >>"$dir/apt.log" 2>&1
		apt-get install -y -q slurm-wlm munge >>"$dir/apt.log" 2>&1 || {
			tail -20 "$dir/apt.log" >&2
			exit 1
		}
	fi
fi

# A free TCP port (the kernel's choice), so that clusters do not collide.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
		echo $((20000 + RANDOM % 20000))
}

stop() {
	"$(dirname "$0")/slurm-down.sh" "$dir" >&2 || true
}
fail() {
	log "$*"
	for f in "$dir"/log/*.log; do
		[ -f "$f" ] && { echo "--- $f" >&2; tail -20 "$f" >&2; }
	done
	stop
	exit 1
}

mkdir -p "$dir/log" "$dir/state" "$dir/spool" "$dir/munge"
chown munge:munge "$dir/munge"
chmod 0755 "$dir/munge"

# munged as the munge user, with its own socket: a munged the machine may
# already run is left alone.
sock="$dir/munge/munge.socket"
if [ ! -f /etc/munge/munge.key ]; then
	fail "no /etc/munge/munge.key (the munge package creates it at install)"
fi
if ! timeout 10 su -s /bin/sh munge -c "munged --socket='$sock' --pid-file='$dir/munge/munged.pid' --log-file='$dir/munge/munged.log' --seed-file='$dir/munge/munged.seed'"; then
	cp "$dir/munge/munged.log" "$dir/log/munged.log" 2>/dev/null || true
	fail "munged did not start"
fi
cp "$dir/munge/munged.pid" "$dir/munged.pid"

# Two fake GPUs: character devices (the same device as /dev/null). Slurm
# refuses regular files, and a count-only gres leaves the node INVAL.
for i in 0 1; do
	[ -c "$dir/gpu$i" ] || mknod "$dir/gpu$i" c 1 3
done

ctld_port=$(free_port)
slurmd_port=$(free_port)
while [ "$slurmd_port" = "$ctld_port" ]; do slurmd_port=$(free_port); done

cat >"$dir/slurm.conf" <<EOF
ClusterName=cairn-test
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/slurmd-%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
ReturnToService=2
# Short waits so that the tests of time limits and cancels are short.
KillWait=5
MinJobAge=300
InactiveLimit=0
SlurmdParameters=config_overrides
GresTypes=gpu
DefMemPerCPU=500
NodeName=localhost NodeAddr=127.0.0.1 CPUs=8 RealMemory=8000 Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
cat >"$dir/gres.conf" <<EOF
NodeName=localhost Name=gpu File=$dir/gpu[0-1]
EOF

export SLURM_CONF="$dir/slurm.conf"
timeout 20 slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start"
timeout 20 slurmd -f "$SLURM_CONF" -N localhost || fail "slurmd did not start"

# Wait until the node is idle (about a second here).
deadline=$((SECONDS + 60))
until [ "$(timeout 5 sinfo -h -N -o %t 2>/dev/null | head -1)" = idle ]; do
	if [ $SECONDS -ge $deadline ]; then
		timeout 5 sinfo -N -l >&2 || true
		fail "the node did not become idle within 60 s"
	fi
	sleep 0.2
done

cat >"$dir/env" <<EOF
export SLURM_CONF=$dir/slurm.conf
export CAIRN_SLURM_TEST=1
export CAIRN_SLURM_DIR=$dir
EOF
log "cluster up in $dir"
cat "$dir/env"
