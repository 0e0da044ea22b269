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
# Then, at thousands of jobs: a cold apply of one for_each stage of
# BENCH_SLURM_ARRAY nodes (max_submitted as large, poll_interval 2s) side by
# side with a hand-written job array of as many tasks and one squeue poll
# loop (1 s), with cairn's sbatch and status-query calls counted (a PATH
# shim logs each); and a chain of BENCH_SLURM_CHAIN trivial nodes against
# Slurm's own dependency chain (sbatch --dependency=afterok, all submitted
# at once, one poll loop), per hop. Each row has its target, met or MISSED.
#
# Environment:
#   BENCH_SLURM_NODES=200      nodes of the cairn run and of the parallel loop
#   BENCH_SLURM_SEQ=10         jobs of the one-after-another loop
#   BENCH_SLURM_RUNS=3         runs of each (the median is reported)
#   BENCH_SLURM_ARRAY=1000     nodes of the one-stage run against a job array (0: skip)
#   BENCH_SLURM_ARRAY_RUNS=1   runs of it, cairn and the array in turns (the median is reported)
#   BENCH_SLURM_CHAIN=20       nodes of the chain (0: skip)
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

# --- thousands of jobs: one stage as job arrays, against a hand-written one
A=${BENCH_SLURM_ARRAY:-1000}
ARUNS=${BENCH_SLURM_ARRAY_RUNS:-1}
CH=${BENCH_SLURM_CHAIN:-20}
shim=$work/shim
mkdir -p "$shim"
for c in sbatch squeue sacct; do
	real=$(command -v "$c")
	printf '#!/bin/sh\necho "$(date +%%s.%%N) $*" >>"$CALLS.%s"\nexec %s "$@"\n' "$c" "$real" >"$shim/$c"
	chmod +x "$shim/$c"
done

# cairn_stage R: a cold apply of A trivial instances of one stage; prints
# its wall time, its sbatch calls, and the least and median gap between its
# status queries after the first minute (steady state).
cairn_stage() {
	local ws=$work/array-$1 t0 t1 queries
	mkdir -p "$ws"
	cat >"$ws/main.hcl" <<EOF
pipeline "bench" {
  executor "slurm" {
    max_submitted = $A
    poll_interval = "2s"
  }
}

stage "command" "node" {
  for_each = toset([for i in range($A) : tostring(i)])
  run      = ["true", each.key]
}
EOF
	export CALLS=$ws/calls
	local timer=()
	[ -x /usr/bin/time ] && timer=(/usr/bin/time -f "%U %S" -o "$ws/cpu")
	t0=$(now)
	(cd "$ws" && PATH=$shim:$PATH CAIRN_NO_FSYNC=1 "${timer[@]}" "$CAIRN" apply main.hcl >"$ws/apply.log" 2>&1) || { tail -20 "$ws/apply.log" >&2; exit 1; }
	t1=$(now)
	queries=$(cat "$CALLS.squeue" "$CALLS.sacct" 2>/dev/null | grep -v '%k' | awk '{print $1}' | sort -g)
	echo "$(echo "$t1 - $t0" | bc -l) $(wc -l <"$CALLS.sbatch") $(echo "$queries" |
		awk -v t0="$t0" 'NR > 1 && $1 - t0 > 60 { print $1 - p } { p = $1 }' | sort -g |
		awk '{ g[NR] = $1 } END { if (!NR) { print "0 0"; exit } printf "%.2f %.2f", g[1], g[int((NR + 1) / 2)] }') $(awk '{ print $1 + $2 }' "$ws/cpu" 2>/dev/null || echo -)"
}

# hand_array R: sbatch --array of A trivial tasks, then squeue every second
# until none is left.
hand_array() {
	local t0 t1 id
	t0=$(now)
	id=$(sbatch --parsable --job-name="bench-array-$1" --output=/dev/null --array=0-$((A - 1)) --wrap 'true $SLURM_ARRAY_TASK_ID')
	while [ -n "$(squeue -h -j "$id" -o %i 2>/dev/null | head -1)" ]; do sleep 1; done
	t1=$(now)
	echo "$t1 - $t0" | bc -l
}

# cairn_chain: CH trivial nodes, each after the one before; prints the
# wall time.
cairn_chain() {
	local ws=$work/chain t0 t1 i
	mkdir -p "$ws"
	{
		printf 'pipeline "bench" {\n  executor "slurm" {}\n}\n'
		for i in $(seq 0 $((CH - 1))); do
			printf 'stage "command" "n%d" {\n  run = ["true", "%d"]\n' "$i" "$i"
			[ "$i" -gt 0 ] && printf '  after = [stage.n%d]\n' $((i - 1))
			printf '}\n'
		done
	} >"$ws/main.hcl"
	t0=$(now)
	(cd "$ws" && CAIRN_NO_FSYNC=1 "$CAIRN" apply main.hcl >"$ws/apply.log" 2>&1) || { tail -20 "$ws/apply.log" >&2; exit 1; }
	t1=$(now)
	echo "$t1 - $t0" | bc -l
}

# slurm_chain: CH trivial jobs, each --dependency=afterok on the one
# before, all submitted at once; then squeue every second until the last
# has ended.
slurm_chain() {
	local t0 t1 i id="" dep
	t0=$(now)
	for i in $(seq "$CH"); do
		dep=()
		[ -n "$id" ] && dep=(--dependency=afterok:"$id")
		id=$(sbatch --parsable --job-name=bench-chain --output=/dev/null "${dep[@]}" --wrap "true $i")
	done
	while [ -n "$(squeue -h -j "$id" -o %i 2>/dev/null | head -1)" ]; do sleep 1; done
	t1=$(now)
	echo "$t1 - $t0" | bc -l
}

verdict() { if [ "$1" = 1 ]; then echo met; else echo MISSED; fi; }

if [ "$A" -gt 0 ]; then
	cw=() cs=() cg=() cmed=() hw=() ccpu=()
	for r in $(seq "$ARUNS"); do
		echo "== run $r/$ARUNS: cairn, one stage of $A nodes" >&2
		read -r w sb g med cpu <<<"$(cairn_stage "$r")"
		cw+=("$w") cs+=("$sb") cg+=("$g") cmed+=("$med") ccpu+=("$cpu")
		echo "== run $r/$ARUNS: a hand-written array of $A tasks" >&2
		hw+=("$(hand_array "$r")")
	done
	acm=$(printf '%s\n' "${cw[@]}" | median)
	ahm=$(printf '%s\n' "${hw[@]}" | median)
	subs=$(printf '%s\n' "${cs[@]}" | sort -g | tail -1)
	gap=$(printf '%s\n' "${cg[@]}" | sort -g | head -1)
	gmed=$(printf '%s\n' "${cmed[@]}" | median)
	cpum=$(printf '%s\n' "${ccpu[@]}" | grep -v '^-$' | median)
	table=$(
		cat <<EOF

## Slurm at thousands of jobs: one stage of $A trivial nodes, median of $ARUNS run(s) in turns

| what | figure | target | verdict |
|---|---|---|---|
| cairn apply, wall (s) | $(printf %.1f "$acm") | <= the hand-written array's | $(verdict "$(echo "$acm <= $ahm" | bc -l)") |
| a hand-written job array + one squeue loop (1 s), wall (s) | $(printf %.1f "$ahm") | (anchor) | |
| cairn / the array, wall | $(echo "$acm / $ahm" | bc -l | xargs printf %.3f) | <= 1 | |
| cairn's own CPU time, user + sys (s) | ${cpum:-not measured (no /usr/bin/time)} | | |
| cairn's sbatch calls (most of any run) | $subs | <= 1 per 1,000 nodes ($(((A + 999) / 1000))) | $(verdict "$(echo "$subs <= ($A + 999) / 1000" | bc)") |
| least gap between two status queries after the first minute (s) | $gap | >= 2 | $(verdict "$(echo "$gap >= 2" | bc -l)") |
| median gap between two status queries after the first minute (s) | $gmed | (poll_interval = "2s") | |

cairn's calls are counted by a PATH shim in front of sbatch, squeue and
sacct; its lookups by comment (squeue --format=%i|%V|%k) are not status
queries.
EOF
	)
	echo "$table"
	[ -f "$OUT/results.md" ] && echo "$table" >>"$OUT/results.md"
fi

if [ "$CH" -gt 0 ]; then
	echo "== cairn: a chain of $CH nodes" >&2
	cc=$(cairn_chain)
	echo "== Slurm: a dependency chain of $CH jobs" >&2
	sc=$(slurm_chain)
	table=$(
		cat <<EOF

## Slurm: a chain of $CH trivial nodes, per hop

| what | wall (s) | per hop (s) | target | verdict |
|---|---|---|---|---|
| cairn apply, each node after the one before | $(printf %.1f "$cc") | $(echo "$cc / $CH" | bc -l | xargs printf %.2f) | <= Slurm's own chain's (+10%) | $(verdict "$(echo "$cc <= 1.1 * $sc" | bc -l)") |
| sbatch --dependency=afterok chain + one squeue loop (1 s) | $(printf %.1f "$sc") | $(echo "$sc / $CH" | bc -l | xargs printf %.2f) | (anchor) | |
EOF
	)
	echo "$table"
	[ -f "$OUT/results.md" ] && echo "$table" >>"$OUT/results.md"
fi
exit 0
