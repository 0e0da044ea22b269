#!/usr/bin/env bash
# make demo-optimizer: seed 002's prompt-optimizer grid end to end
# (pipelines/optimizer_grid.hcl): 2 methods x 2 datasets x 3 seeds, each job
# optimize -> validate -> select -> test, then the per-job summary lines and
# the aggregate table over the seeds.
#
# Everything is SIMULATED: the task and reflection models are
# cmd/cairn-sim-model (no model runs; its answers are a deterministic
# function of the messages), started by the pipeline's serve stages on
# simulated GPUs, and the
# methods are testdata/optimizer/methods/sim_method.py. To stay quick the
# budget is 100 rollouts, so the jobs are non-conformant smoke runs
# (result.json says so) and the table includes them explicitly.
#
# The workspace is demo/optimizer/ in the repository (git-ignored; DEMO_DIR
# names another folder): the simulated grid's files (testdata/optimizer/ and
# the worker) are copied there, and the pipeline is applied from its place in
# the repository, as from a project folder of one's own. The jobs' out
# folders are DEMO_DIR/runs/, the table DEMO_DIR/reports/, the cache
# DEMO_DIR/cache/. Running the demo again with nothing changed takes every
# node from the cache and prints the same table.
#
# Arguments are handed to cairn apply after the demo's own, e.g.
#   bash pipelines/demo-optimizer.sh --var 'methods=["simgepa"]' --var 'datasets=["sums"]'
#
# The summary lines (one JSON object per job) are on standard output; the
# progress, without the lines of nodes that ended well, and every failure
# whole are on standard error. When a node fails the demo exits with apply's
# status and prints no table: the one on disk would not be this run's.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
bin=${DEMO_BIN:-$repo/bin}
cairn=$bin/cairn
sim=$bin/cairn-sim-model # as make demo-optimizer builds it; make sim puts it in sim/
[ -x "$sim" ] || sim=$bin/sim/cairn-sim-model
for p in "$cairn" "$sim"; do
	[ -x "$p" ] || { echo "demo-optimizer: $p is missing: run 'make demo-optimizer' (it builds cairn and the simulated model)" >&2; exit 2; }
done
ws=${DEMO_DIR:-$repo/demo/optimizer}
mkdir -p "$ws/testdata"
ws=$(cd "$ws" && pwd)
cp -R "$repo/testdata/optimizer" "$repo/testdata/workers" "$ws/testdata/"

# The servers are serve stages of the pipeline (--var serve=true): cairn
# starts the SIMULATED task model (one replica per free GPU from port 8000)
# and the SIMULATED reflection model (4 GPUs, port 8200) on SIMULATED GPUs
# when a job will ask them, and stops them when none will.
export PATH="$(dirname "$sim"):$PATH"
export CAIRN_GPUS=${CAIRN_GPUS:-sim:6}
export CAIRN_LEASE_DIR=${CAIRN_LEASE_DIR:-$ws/leases}
echo "demo-optimizer: cairn serves the SIMULATED task and reflection models (cairn-sim-model) on SIMULATED GPUs ($CAIRN_GPUS); jobs under $ws/runs" >&2

# Standard output: the summary lines (--summaries). Standard error: apply's
# progress less the lines of nodes that started ("  >") or ended well
# ("  ✓"), the stages' progress lines ("  ·") and the aggregate node's copy
# of the table (printed below, also when the node is taken from the cache);
# everything else, the closing report with each failure whole included.
cd "$ws"
exec 3>&1
set +e
"$cairn" apply "$repo/pipelines/optimizer_grid.hcl" --summaries \
	--cache cache --var runs=runs --var reports=reports --var serve=true \
	--var budget=100 --var 'method_args=["--batch","40"]' --var include_nonconformant=true "$@" \
	2>&1 >&3 3>&- | awk '
		/^  (✓|·|>) / { next }
		/^stage\.summary\["grid"\]: [0-9]+ row/ { table = 1; next }
		table && (/^$/ || /\t/) { next }
		{ table = 0; print; fflush() }' >&2
status=${PIPESTATUS[0]}
set -e
exec 3>&-
if [ "$status" -ne 0 ]; then
	"$cairn" report --cache cache >&2
	echo "demo-optimizer: cairn apply exited with status $status (failures above); no aggregate table is printed: the one in $ws/reports would not be this run's" >&2
	exit "$status"
fi

echo
echo "The aggregate table ($ws/reports/aggregate.tsv; docs/aggregate.md):"
cat reports/aggregate.tsv
# The report's path last, on standard error: standard output stays the
# summary lines and the table.
echo >&2
echo "The run's report (open it in a browser; trace.tsv beside it):" >&2
"$cairn" report --cache cache >&2
