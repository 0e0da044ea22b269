#!/usr/bin/env bash
# bench/grid.sh — how fast cairn plans and validates grids (#34): four
# for_each stages over a setproduct grid of keys, each instance after the
# previous stage's same key (bench/gen -shape grid), a chain of separate
# stage blocks (-shape chain), a grid of 10,000 runs read from a JSON
# file, and seed 002's experiment grid (pipelines/optimizer_grid.hcl with
# pipelines/grids/experiment.json).
# Each row is the median of RUNS runs taken in turns with its anchor
# (`ninja -n` on the same graph) where there is one; wall time, CPU time
# (user + system) and the largest peak RSS, with the target and met /
# MISSED (on the wall time, and on the memory where the row has a memory
# target). Appended to bench/out/results.md (bench/run.sh calls it; it
# runs on its own too).
#
#   bench/grid.sh [CAIRN]   CAIRN: the binary (default: build bin/cairn)
#
# Environment:
#   BENCH_GRID_RUNS=5   runs of each command
set -euo pipefail

CAIRN=${1:-}
[ -z "$CAIRN" ] || CAIRN=$(realpath "$CAIRN")
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/bench/out
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
if [ -z "$CAIRN" ]; then
	"$GO" build -o "$ROOT/bin/cairn" ./cmd/cairn
	CAIRN=$ROOT/bin/cairn
fi
RUNS=${BENCH_GRID_RUNS:-5}
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/cairn-bench-grid.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
"$GO" build -o "$WORK/gen" ./bench/gen
unset CAIRN_CACHE CAIRN_NO_FSYNC CAIRN_NO_MEMO GOGC GOMEMLIMIT

# one DIR CMD...: one run under /usr/bin/time in DIR: "wall cpu kib".
one() {
	local dir=$1
	shift
	(cd "$dir" && /usr/bin/time -f '%e %U %S %M' -o "$WORK/time" "$@" >/dev/null 2>&1) || {
		echo "bench/grid.sh: $* failed in $dir" >&2
		exit 1
	}
	awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }' "$WORK/time"
}

# median: the middle of the numbers on stdin.
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

rows=()
# row WHAT DIR MAX_S MAX_MIB ANCHOR CMD...: RUNS runs of CMD in DIR, in
# turns with ANCHOR (a command, or "" for none); a MAX_MIB of 0 is no
# memory target.
row() {
	local what=$1 dir=$2 max_s=$3 max_mib=$4 anchor=$5
	shift 5
	local walls=() cpus=() rss=0 awalls=() w c k
	one "$dir" "$@" >/dev/null # warm the page cache and the cache folder
	for _ in $(seq "$RUNS"); do
		read -r w c k < <(one "$dir" "$@")
		walls+=("$w") cpus+=("$c")
		[ "$k" -gt "$rss" ] && rss=$k
		if [ -n "$anchor" ]; then
			read -r w c k < <(one "$dir" $anchor)
			awalls+=("$w")
		fi
	done
	local med cpu mib=$((rss / 1024)) verdict=met target="<= $max_s s"
	med=$(printf '%s\n' "${walls[@]}" | median)
	cpu=$(printf '%s\n' "${cpus[@]}" | median)
	awk -v t="$med" -v m="$max_s" 'BEGIN { exit !(t <= m) }' || verdict=MISSED
	if [ "$max_mib" != 0 ]; then
		target="$target, <= $max_mib MiB"
		[ "$mib" -le "$max_mib" ] || verdict=MISSED
	fi
	local side="-"
	if [ -n "$anchor" ]; then
		side="$anchor: $(printf '%s\n' "${awalls[@]}" | median) s"
	fi
	rows+=("| $what | $med s | $cpu s | $mib MiB | $side | $target | $verdict |")
	echo "$what: $med s (CPU $cpu s), $mib MiB ($side): $target: $verdict" >&2
}

"$WORK/gen" -shape grid -n 10000 -out "$WORK/grid10k" >&2
"$WORK/gen" -shape grid -n 100000 -out "$WORK/grid100k" >&2
"$WORK/gen" -shape chain -n 10000 -out "$WORK/chain10k" >&2
row "grid 10k (4 stages x 2,500 setproduct keys), cairn validate" "$WORK/grid10k" 0.1 0 "" "$CAIRN" validate
row "grid 10k, cairn plan" "$WORK/grid10k" 0.1 0 "ninja -n" "$CAIRN" plan
row "chain of 10k stage blocks, cairn validate" "$WORK/chain10k" 0.1 0 "" "$CAIRN" validate
row "chain of 10k stage blocks, cairn plan" "$WORK/chain10k" 0.1 0 "ninja -n" "$CAIRN" plan
row "grid 100k (4 stages x 25,000), cairn plan" "$WORK/grid100k" 1 0 "ninja -n" "$CAIRN" plan
# Functions over a list of 10,000 run names, the result of a for
# expression: go-cty's conversion of such a tuple, its distinct and its
# length() of a set were quadratic or sorted (62.6 s before
# third_party/go-cty's patches and dsl's distinct); a guard, 1 s.
mkdir -p "$WORK/lists"
cat >"$WORK/lists/pipe.hcl" <<'HCL'
pipeline "lists" {}
locals {
  ids    = flatten([for a in range(100) : [for b in range(100) : "run-${a}-${b}"]])
  seeds  = flatten([for a in range(100) : [for b in range(100) : a * 100 + b]])
  joined = join(",", local.ids)
  sorted = sort(local.ids)
  uniq   = distinct(local.ids)
  kept   = compact(local.ids)
  byid   = zipmap(local.ids, local.seeds)
  both   = setunion(local.ids, ["extra"])
  chunks = chunklist(local.ids, 100)
  total  = sum(local.seeds)
}
stage "command" "chunk" {
  for_each = toset(local.chunks[0])
  run      = ["echo", each.key, local.byid[each.key], length(local.uniq), length(local.kept), length(local.both), local.total, local.sorted[0], substr(local.joined, 0, 20)]
}
HCL
row "10,000 run names through join, sort, distinct, compact, zipmap, setunion, chunklist, sum; 100 nodes, cairn validate" "$WORK/lists" 1 0 "" "$CAIRN" validate
# A grid of 10,000 runs read from a JSON file, each run's settings handed
# to its command as JSON (go-cty's jsondecode read the text three times
# over, its jsonencode wrote each decimal at 512 bits: 1.6 s before dsl's
# own); a guard, 0.5 s.
mkdir -p "$WORK/jsongrid"
{
	printf '{'
	for i in $(seq 0 9999); do
		[ "$i" = 0 ] || printf ', '
		printf '"run%05d": {"lr": 0.%03d, "seed": %d, "method": "gepa", "tags": ["a", "b"]}' "$i" $((i % 1000)) "$i"
	done
	printf '}\n'
} >"$WORK/jsongrid/runs.json"
cat >"$WORK/jsongrid/pipe.hcl" <<'HCL'
pipeline "jsongrid" {}
locals {
  runs = jsondecode(file("runs.json"))
}
stage "command" "train" {
  for_each = local.runs
  run      = ["train", "--config", jsonencode(each.value)]
}
HCL
row "grid of 10,000 runs from a JSON file (jsondecode(file(...)), jsonencode(each.value)), cairn plan" "$WORK/jsongrid" 0.5 0 "" "$CAIRN" plan pipe.hcl
row "seed 002's experiment grid (3,745 nodes), cairn plan" "$ROOT" 0.1 100 "" \
	"$CAIRN" plan pipelines/optimizer_grid.hcl --var grid=pipelines/grids/experiment.json

{
	echo ""
	echo "## Grids: plan and validate (median of $RUNS runs in turns with the anchor; largest peak RSS)"
	echo ""
	echo "$(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg). The target is on the wall-clock time; CPU is user + system time."
	echo ""
	echo "| what | time | CPU | peak RSS | anchor | target | |"
	echo "|---|---|---|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
} | tee -a "$OUT/results.md"
