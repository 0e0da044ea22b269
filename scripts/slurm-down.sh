#!/usr/bin/env bash
# Stops the cluster scripts/slurm-up.sh started in DIR: SIGTERM to slurmd,
# slurmctld and munged by the pids in DIR's pid files, then waits for each
# (SIGKILL after 15 s). Safe to run twice and on a half-started cluster.
set -uo pipefail
dir=${1:?usage: slurm-down.sh DIR}

stop_pid() { # name pidfile
	local pid
	[ -f "$2" ] || return 0
	pid=$(cat "$2" 2>/dev/null) || return 0
	case $pid in '' | *[!0-9]*) return 0 ;; esac
	kill -TERM "$pid" 2>/dev/null || { rm -f "$2"; return 0; }
	for _ in $(seq 150); do
		kill -0 "$pid" 2>/dev/null || { rm -f "$2"; return 0; }
		sleep 0.1
	done
	echo "slurm-down: $1 ($pid) still runs after 15 s: SIGKILL" >&2
	kill -KILL "$pid" 2>/dev/null
	rm -f "$2"
}

# Jobs first, so that no job step outlives the cluster.
if [ -f "$dir/slurmctld.pid" ] && [ -f "$dir/slurm.conf" ]; then
	SLURM_CONF="$dir/slurm.conf" timeout 10 scancel --user="$(id -un)" 2>/dev/null
	for _ in $(seq 50); do
		[ -z "$(SLURM_CONF="$dir/slurm.conf" timeout 5 squeue -h -t running,completing -o %i 2>/dev/null)" ] && break
		sleep 0.1
	done
fi
stop_pid slurmd "$dir/slurmd.pid"
stop_pid slurmctld "$dir/slurmctld.pid"
stop_pid munged "$dir/munged.pid"
