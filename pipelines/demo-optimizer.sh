#!/usr/bin/env bash
# make demo-optimizer: seed 002's prompt-optimizer grid end to end
# (pipelines/optimizer_grid.hcl): 2 methods x 2 datasets x 3 seeds, each job
# optimize -> validate -> select -> test, then the per-job summary lines and
# the aggregate table over the seeds.
#
# Everything is SIMULATED: the task model is cmd/cairn-sim-model (no model
# runs; its answers are a deterministic function of the messages) and the
# methods are testdata/optimizer/methods/sim_method.py. To stay quick the
# budget is 100 rollouts, so the jobs are non-conformant smoke runs
# (result.json says so) and the table includes them explicitly.
#
# The workspace is demo/optimizer/ in the repository (git-ignored;
# DEMO_DIR overrides it). Running the demo again with nothing changed takes
# every node from the cache and prints the same table.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
bin=${DEMO_BIN:-$repo/bin}
cairn=$bin/cairn
sim=$bin/cairn-sim-model # as make demo-optimizer builds it; make sim puts it in sim/
[ -x "$sim" ] || sim=$bin/sim/cairn-sim-model
ws=${DEMO_DIR:-$repo/demo/optimizer}
for p in "$cairn" "$sim"; do
	[ -x "$p" ] || { echo "demo-optimizer: $p is missing: run 'make demo-optimizer' (it builds cairn and the simulated model)" >&2; exit 2; }
done
mkdir -p "$ws"

"$sim" --request-log "$ws/requests.jsonl" >"$ws/sim.url" 2>"$ws/sim.log" &
simpid=$!
trap 'kill "$simpid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
	[ -s "$ws/sim.url" ] && break
	kill -0 "$simpid" 2>/dev/null || { cat "$ws/sim.log" >&2; exit 1; }
	sleep 0.1
done
url=$(head -n 1 "$ws/sim.url")
echo "demo-optimizer: SIMULATED task model at $url; jobs under $ws/runs"

cd "$repo"
TASK_ENDPOINTS=$url "$cairn" apply pipelines/optimizer_grid.hcl \
	--cache "$ws/cache" --var "runs=demo/optimizer/runs" --var "reports=demo/optimizer/reports" \
	--var budget=100 --var 'method_args=["--batch","40"]' --var include_nonconformant=true 2>&1 |
	grep -E '^\{"status"|^Apply complete|^Error|^  ✗' || true

echo
echo "The aggregate table (demo/optimizer/reports/aggregate.tsv; docs/aggregate.md):"
cat "$ws/reports/aggregate.tsv"
