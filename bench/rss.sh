#!/usr/bin/env bash
# bench/rss.sh — what a run costs in memory: peak RSS of `cairn plan`,
# `cairn apply` cold and `cairn apply` no-op (answered by the up-to-date
# check, and in full with CAIRN_NO_MEMO=1) on bench/gen's mixed graph, and
# an evaluate node's item store of 1M items opened (time and peak RSS, in a
# process of its own: bench/itemstore). Each figure is one run under
# /usr/bin/time -v, printed with its target and met / MISSED (figures the
# issue sets no target for say "no target"), and appended to
# bench/out/results.md as a table (bench/run.sh calls it; it runs on its
# own too).
#
#   bench/rss.sh [CAIRN]   CAIRN: the binary (default: build bin/cairn)
#
# Environment:
#   BENCH_RSS_SIZES=10000,100000   graph sizes
#   BENCH_RSS_ITEMS=1000000        items in the store
#
# Run time: the cold apply of 100,000 trivial nodes dominates (100,000
# shell commands at --parallelism 2): the whole script took 6.5 minutes
# (4 of them that apply) at a load average falling from 16 to 5 on 2 cores,
# 35 minutes at ~36.
# BENCH_RSS_SIZES=10000 leaves the 100k rows out.
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
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/cairn-bench-rss.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
"$GO" build -o "$WORK/gen" ./bench/gen
"$GO" build -o "$WORK/itemstore" ./bench/itemstore
unset CAIRN_CACHE CAIRN_NO_FSYNC CAIRN_NO_MEMO GOGC GOMEMLIMIT

rows=()
# row WHAT TIMEFILE TARGET_MIB [TARGET_S]: a row from /usr/bin/time -v's
# file; a target of 0 is none.
row() {
	local what=$1 file=$2 max_mib=$3 max_s=${4:-0}
	local kib wall mib secs verdict
	kib=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$file")
	wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$file")
	secs=$(awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; printf "%.2f", s }' <<<"$wall")
	[ -n "${5:-}" ] && secs=$5
	mib=$((kib / 1024))
	local target="no target"
	verdict="reported"
	if [ "$max_mib" != 0 ]; then
		target="<= $max_mib MiB"
		verdict=met
		[ "$mib" -le "$max_mib" ] || verdict=MISSED
	fi
	if [ "$max_s" != 0 ]; then
		target="$target, <= $max_s s"
		awk -v t="$secs" -v m="$max_s" 'BEGIN { exit !(t <= m) }' || verdict=MISSED
	fi
	rows+=("| $what | $mib MiB | $secs s | $target | $verdict |")
	echo "$what: $mib MiB, $secs s: $target: $verdict" >&2
}

IFS=, read -r -a sizes <<<"${BENCH_RSS_SIZES:-10000,100000}"
for n in "${sizes[@]}"; do
	dir=$WORK/n$n
	"$WORK/gen" -n "$n" -out "$dir" >&2
	cd "$dir"
	k=$((n / 1000))k
	# Targets in MiB (0: none): plan, apply cold, no-op answered by the
	# up-to-date check, no-op evaluated in full. Up to 256 MiB of heap
	# no collection runs (cmd/cairn/gc.go): a 10k apply's peak is that,
	# whatever it holds. Past it, the apply holds per node only what
	# later nodes read of it (engine's shedRun).
	target=0 cold=0 memo=0 full=0
	case $n in
	10000) target=100 cold=300 memo=50 full=200 ;;
	100000) cold=1024 memo=100 full=1200 ;;
	esac
	"$CAIRN" plan >/dev/null # the empty cache folder
	/usr/bin/time -v -o "$WORK/t" "$CAIRN" plan >/dev/null
	row "cairn plan, $k nodes, empty cache" "$WORK/t" "$target"
	rm -rf out .cairn && mkdir out
	/usr/bin/time -v -o "$WORK/t" "$CAIRN" apply --parallelism 2 >/dev/null
	row "cairn apply, $k nodes, cold" "$WORK/t" "$cold"
	# The cold apply left the memo: one no-op checks and settles the
	# outputs it wrote moments ago, the next is timed.
	"$CAIRN" apply --parallelism 2 >/dev/null
	/usr/bin/time -v -o "$WORK/t" "$CAIRN" apply --parallelism 2 >/dev/null
	row "cairn apply, $k nodes, no-op (up-to-date check)" "$WORK/t" "$memo"
	/usr/bin/time -v -o "$WORK/t" env CAIRN_NO_MEMO=1 "$CAIRN" apply --parallelism 2 >/dev/null
	row "cairn apply, $k nodes, no-op (full evaluation)" "$WORK/t" "$full"
	cd "$ROOT"
	rm -rf "$dir"
done

items=${BENCH_RSS_ITEMS:-1000000}
"$WORK/itemstore" -write -n "$items" "$WORK/store"
/usr/bin/time -v -o "$WORK/t" "$WORK/itemstore" "$WORK/store" >"$WORK/open"
opened=$(sed -n 's/.*open_s=\([0-9.]*\).*/\1/p' "$WORK/open")
cpu=$(sed -n 's/.*cpu_s=\([0-9.]*\).*/\1/p' "$WORK/open")
max_mib=0 max_s=0
[ "$items" = 1000000 ] && max_mib=200 max_s=1
row "evaluate item store, $items items, opened (CPU $cpu s)" "$WORK/t" "$max_mib" "$max_s" "$opened"

{
	echo ""
	echo "## Peak memory (one run each, /usr/bin/time -v; bench/gen's mixed graph)"
	echo ""
	echo "The store's time is OpenStore's own (bench/itemstore), the others the command's wall-clock time."
	echo ""
	echo "| what | peak RSS | time | target | |"
	echo "|---|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
} | tee -a "$OUT/results.md"
