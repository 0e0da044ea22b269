#!/usr/bin/env bash
# make demo: the seed-000 workflow end to end (pipelines/aime24_batch.hcl):
# preflight -> RULER gate -> 4-variant AIME24 batch on the free GPUs ->
# comparison table and Pareto front.
#
# The workloads are SIMULATED (bin/sim/, built by `make sim`): no model runs,
# every number is a deterministic function of the example configs. The
# batch runs on this machine's free GPUs when `cairn gpus` finds any, else on
# four simulated ones (CAIRN_GPUS=sim:4). Set CAIRN_GPUS yourself to choose.
#
# The workspace is demo/ in the repository (git-ignored; DEMO_DIR overrides
# it): submissions/demo/*.json are created once and then left alone, so you
# can edit one and run `make demo` again to see exactly its stages rerun.
# Delete demo/ to start over. Running the demo again with nothing changed
# takes everything from the cache.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
bin=${DEMO_BIN:-$repo/bin} # cairn and sim/, as `make build sim` makes them
cairn=$bin/cairn
ws=${DEMO_DIR:-$repo/demo}
tag=demo
names=(batch_demo_id0 batch_demo_id1 batch_demo_id2 batch_demo_id3)

for p in "$cairn" "$bin"/sim/{preflight,ruler,aime24}; do
	[ -x "$p" ] || { echo "demo: $p is missing: run 'make demo' (it builds cairn and the simulated tools)" >&2; exit 2; }
done

mkdir -p "$ws/bin/sim" "$ws/submissions/$tag"
# The simulated tools are the runners the pipeline declares as inputs:
# copied only when they changed, so a rebuild to the same bytes keeps the
# cache.
for p in preflight ruler aime24; do
	cmp -s "$bin/sim/$p" "$ws/bin/sim/$p" 2>/dev/null || cp "$bin/sim/$p" "$ws/bin/sim/$p"
done

# Four example variants of a sparse-attention config: more of the KV cache
# kept (higher ratio) is more accurate and slower. sim.duration_ms makes the
# simulated runs take visible time.
example() { # name topk_val topk_ratio aime24_ms
	local f="$ws/submissions/$tag/$1.json"
	[ -e "$f" ] && return 0
	cat >"$f" <<EOF
{
  "vortex_topk_val": $2,
  "vortex_topk_ratio": $3,
  "sim": {"duration_ms": {"preflight": 60, "ruler": 300, "aime24": $4}}
}
EOF
}
example batch_demo_id0 2048 0.12 2200
example batch_demo_id1 1024 0.2 2600
example batch_demo_id2 768 0.3 3000
example batch_demo_id3 512 0.5 3400

if [ -z "${CAIRN_GPUS:-}" ]; then
	if "$cairn" gpus 2>/dev/null | grep -Eq '^[0-9]+ '; then
		echo "== GPUs: this machine's (the demo's workloads are simulated and use none)"
	else
		export CAIRN_GPUS=sim:4
		echo "== GPUs: none found here; using four simulated ones (CAIRN_GPUS=sim:4)"
	fi
fi
"$cairn" gpus
echo

list=$(printf '"%s",' "${names[@]}")
args=(
	"$repo/pipelines/aime24_batch.hcl"
	--var-file "$repo/pipelines/sim.tfvars"
	--var "tag=$tag"
	--var "variants=[${list%,}]"
)
cd "$ws"

echo "== cairn plan   (workspace: $ws)"
"$cairn" plan "${args[@]}"
echo

echo "== cairn apply"
# The comparison stage prints the table on standard error when it runs; a
# copy of that stream tells whether it did (cached, it prints nothing).
applied=$(mktemp)
trap 'rm -f "$applied"' EXIT
status=0
{ "$cairn" apply "${args[@]}" 2>&1 1>&3 3>&- | tee "$applied" >&2; } 3>&1 || status=$?
echo

dir=reports/$tag
table=$dir/table.md
if grep -q '^| name ' "$applied"; then
	echo "== Comparison table and Pareto front: printed above by stage.batch"
elif [ "$status" -eq 0 ] && [ -f "$table" ]; then
	echo "== Comparison table ($ws/$table, from the cache)"
	echo
	cat "$table"
	echo
	front=$(awk -F'|' 'NR > 2 && NF > 2 && $(NF-1) ~ /^ *front *$/ { gsub(/ /, "", $2); printf "%s%s", sep, $2; sep = ", " }' "$table")
	echo "== Pareto front on (throughput, mean@16): ${front:-none}"
else
	echo "== No comparison this time: see the failures above."
	[ -f "$table" ] && echo "   (the last comparison, of an earlier batch, is still in $ws/$table)"
fi
if [ -f "$table" ]; then
	echo "   plot: $ws/$dir/pareto.svg"
	echo "   also: $ws/$dir/table.tsv, $ws/$dir/table.json"
	echo "   logs: $ws/logs/submission/ (gpu<idx>_<name>.out/.err per batch)"
	echo "   (simulated results: see pipelines/README.md for a real run)"
fi
echo
"$cairn" status | sed -n '/^Batches:/,$p' | head -4
echo
echo "== The run's report (open it in a browser; trace.tsv beside it)"
"$cairn" report
exit "$status"
