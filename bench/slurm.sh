#!/usr/bin/env bash
# bench/slurm.sh [CAIRN] — the slurm executor's overhead per node: a cold
# `cairn apply --executor slurm` of N trivial nodes (run = ["true"]) on a
# local one-node cluster, side by side with shell loops of `sbatch --wait`
# (the same N jobs all at once, in the background, and a few one after
# another). Prints a table and appends it to bench/out/results.md.
#
# Uses the cluster of $SLURM_CONF when CAIRN_SLURM_TEST=1 (eval "$(scripts/
# slurm-up.sh)"), else starts one with scripts/slurm-up.sh (as root) and
# stops it at the end.
#
# Environment:
#   BENCH_SLURM_NODES=200      nodes of the cairn run and of the parallel loop
#   BENCH_SLURM_SEQ=10         jobs of the one-after-another loop
#   BENCH_SLURM_RUNS=3         runs of each (the median is reported)
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
CAIRN=${1:-$ROOT/bin/cairn}
N=${BENCH_SLURM_NODES:-200}
SEQ=${BENCH_SLURM_SEQ:-10}
RUNS=${BENCH_SLURM_RUNS:-3}
OUT=$ROOT/bench/out
mkdir -p "$OUT"
[ -x "$CAIRN" ] || { echo "bench/slurm.sh: $CAIRN is missing: run make build" >&2; exit 2; }

if [ "${CAIRN_SLURM_TEST:-}" != 1 ]; then
	cluster=$(mktemp -d /tmp/cairn-bench-slurm.XXXXXX)
	trap 'bash "$ROOT/scripts/slurm-down.sh" "$cluster"; rm -rf "$cluster"' EXIT
	eval "$(bash "$ROOT/scripts/slurm-up.sh" "$cluster")"
fi
work=$(mktemp -d /tmp/cairn-bench-slurm-work.XXXXXX)
trap 'rm -rf "$work"; [ -n "${cluster:-}" ] && { bash "$ROOT/scripts/slurm-down.sh" "$cluster"; rm -rf "$cluster"; }' EXIT

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# cairn: a cold apply of N independent trivial nodes, in a fresh folder.
cairn_run() {
	local ws=$work/cairn-$1
	mkdir -p "$ws"
	cat >"$ws/main.hcl" <<EOF
pipeline "bench" {
  executor "slurm" {}
}

stage "command" "node" {
  for_each = toset([for i in range($N) : tostring(i)])
  run      = ["true", each.key]
}
EOF
	local t0 t1
	t0=$(now)
	(cd "$ws" && CAIRN_NO_FSYNC=1 "$CAIRN" apply main.hcl >"$ws/apply.log" 2>&1) || { tail -20 "$ws/apply.log" >&2; exit 1; }
	t1=$(now)
	echo "$t1 - $t0" | bc -l
}

# The same N jobs with sbatch --wait, all in the background at once.
loop_parallel() {
	local d=$work/par-$1 t0 t1 i
	mkdir -p "$d"
	t0=$(now)
	for i in $(seq "$N"); do
		timeout 600 sbatch --wait --quiet --job-name="bench-par-$1" --output=/dev/null --wrap "true $i" &
	done
	wait
	t1=$(now)
	echo "$t1 - $t0" | bc -l
}

# SEQ jobs with sbatch --wait, one after another.
loop_sequential() {
	local t0 t1 i
	t0=$(now)
	for i in $(seq "$SEQ"); do
		timeout 600 sbatch --wait --quiet --job-name="bench-seq-$1" --output=/dev/null --wrap "true $i"
	done
	t1=$(now)
	echo "$t1 - $t0" | bc -l
}

command -v bc >/dev/null || { echo "bench/slurm.sh: needs bc (apt-get install bc)" >&2; exit 2; }
c=() p=() s=()
for r in $(seq "$RUNS"); do
	echo "== run $r/$RUNS: cairn ($N nodes)" >&2
	c+=("$(cairn_run "$r")")
	echo "== run $r/$RUNS: sbatch --wait x $N in parallel" >&2
	p+=("$(loop_parallel "$r")")
	echo "== run $r/$RUNS: sbatch --wait x $SEQ one after another" >&2
	s+=("$(loop_sequential "$r")")
done
cm=$(printf '%s\n' "${c[@]}" | median)
pm=$(printf '%s\n' "${p[@]}" | median)
sm=$(printf '%s\n' "${s[@]}" | median)
cpu=$(timeout 10 sinfo -h -N -o %c | head -1)

table=$(
	cat <<EOF

## Slurm executor: $N trivial nodes on a local one-node cluster ($cpu CPUs), median of $RUNS cold runs

| what | wall (s) | per node (ms) | per node / cairn |
|---|---|---|---|
| cairn apply --executor slurm, $N nodes | $(printf %.2f "$cm") | $(echo "1000*$cm/$N" | bc -l | xargs printf %.0f) | 1.00 |
| $N x sbatch --wait, all in the background | $(printf %.2f "$pm") | $(echo "1000*$pm/$N" | bc -l | xargs printf %.0f) | $(echo "($pm/$N)/($cm/$N)" | bc -l | xargs printf %.2f) |
| $SEQ x sbatch --wait, one after another | $(printf %.2f "$sm") | $(echo "1000*$sm/$SEQ" | bc -l | xargs printf %.0f) | $(echo "($sm/$SEQ)/($cm/$N)" | bc -l | xargs printf %.2f) |

Per node: wall time over nodes, submission and completion included (the
jobs do nothing). cairn: one squeue per poll cycle for the whole run, sbatch
20 ms apart; sbatch --wait polls the controller from every waiting process.
EOF
)
echo "$table"
[ -f "$OUT/results.md" ] && echo "$table" >>"$OUT/results.md"
exit 0
