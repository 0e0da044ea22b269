#!/usr/bin/env bash
# bench/aggregate.sh — `cairn aggregate` side by side with scipy.stats.bootstrap
# on the issue's size: 48 rows (4 methods × 12 cells) × 3 seeds × 500 items,
# 10,000 replicates per row. cairn runs its stratified paired bootstrap on
# every core (and, for the per-core figure, on one); the anchor
# (bench/aggregate_scipy.py) reads the same files and runs
# scipy.stats.bootstrap per row on the row's pooled paired differences with
# the same replicates (scipy has no stratified mode; each replicate draws as
# many items as cairn's). Medians of hyperfine runs; the ratio and the
# target (at least 10x faster than scipy) are appended to
# bench/out/results.md (bench/run.sh calls it last; it runs on its own too).
#
#   bench/aggregate.sh [CAIRN]   CAIRN: the binary (default: build bin/cairn)
#
# Environment: BENCH_AGG_RUNS (cairn's runs, default 10), BENCH_AGG_SCIPY_RUNS
# (scipy's, default 3), BENCH_AGG_ITEMS (items per seed, default 500).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/bench/out
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
CAIRN=${1:-}
RUNS=${BENCH_AGG_RUNS:-10}
SCIPY_RUNS=${BENCH_AGG_SCIPY_RUNS:-3}
ITEMS=${BENCH_AGG_ITEMS:-500}
B=10000
if [ -z "$CAIRN" ]; then
	"$GO" build -o "$ROOT/bin/cairn" ./cmd/cairn
	CAIRN=$ROOT/bin/cairn
fi
command -v hyperfine >/dev/null || {
	sudo=""
	[ "$(id -u)" = 0 ] || sudo=sudo
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq hyperfine >/dev/null
}
bash "$ROOT/scripts/crosscheck-deps.sh"
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/cairn-bench-agg.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

/usr/bin/python3 - "$WORK/runs" "$ITEMS" <<'PY'
import json, os, sys
import numpy as np
root, n = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(14)
methods = ["gepa", "miprov2", "textgrad", "trace"]
cells = ["%s/centralized/%s" % (d, m) for d in ["hotpotqa", "math", "ifbench", "hover"] for m in ["qwen", "llama", "mistral"]]
for mi, method in enumerate(methods):
    for cell in cells:
        dataset, runtime, model = cell.split("/")
        for seed in range(3):
            base = (rng.random(n) < 0.5).astype(float)
            dep = (rng.random(n) < 0.5 + 0.03 * mi).astype(float)
            d = os.path.join(root, method, cell.replace("/", "_"), "seed%d" % seed)
            os.makedirs(d)
            items = [{"id": "q%04d" % i, "baseline": base[i], "deployed": dep[i], "valid": True} for i in range(n)]
            json.dump({"format": "cairn.job-test/1", "method": method, "cell_id": cell, "seed": seed,
                       "deployed": "incumbent", "items": items}, open(os.path.join(d, "test.json"), "w"))
            json.dump({"format": "cairn.job-result/1", "status": "ok", "method": method, "cell_id": cell,
                       "dataset": dataset, "runtime": runtime, "model": model, "seed": seed,
                       "budget": 600, "charged_rollouts": 600, "baseline_mean": base.mean(),
                       "deployed_mean": dep.mean(), "delta_pp": 100 * (dep.mean() - base.mean()),
                       "deployed": "incumbent", "fallback_reason": None, "valid_for_aggregation": True,
                       "nonconformant": [], "test_items": n, "test_invalid_items": 0},
                      open(os.path.join(d, "result.json"), "w"))
PY

cores=$(nproc)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "aggregate: 48 rows x 3 seeds x $ITEMS items, $B replicates, $cores cores" >&2
hyperfine --warmup 1 --runs "$RUNS" --export-json "$WORK/cairn.json" \
	-n "cairn aggregate ($cores cores)" "$CAIRN aggregate $WORK/runs --bootstrap $B > /dev/null" \
	-n "cairn aggregate (1 core)" "GOMAXPROCS=1 $CAIRN aggregate $WORK/runs --bootstrap $B > /dev/null" >&2
hyperfine --runs "$SCIPY_RUNS" --export-json "$WORK/scipy.json" \
	-n "scipy.stats.bootstrap" "/usr/bin/python3 $ROOT/bench/aggregate_scipy.py $WORK/runs $B > /dev/null" >&2

load_after=$(cut -d' ' -f1-3 /proc/loadavg)
/usr/bin/python3 - "$WORK/cairn.json" "$WORK/scipy.json" "$cores" "$ITEMS" "$load_before" "$load_after" <<'PY' | tee -a "$OUT/results.md"
import json, statistics, sys
rows = json.load(open(sys.argv[1]))["results"] + json.load(open(sys.argv[2]))["results"]
cores, items, load_before, load_after = sys.argv[3:7]
med = {r["command"]: statistics.median(r["times"]) for r in rows}
cpu = {r["command"]: r["user"] + r["system"] for r in rows}
runs = {r["command"]: len(r["times"]) for r in rows}
scipy = "scipy.stats.bootstrap"
allc = "cairn aggregate (%s cores)" % cores
print()
print("## Aggregation (cairn aggregate vs scipy.stats.bootstrap; 48 rows x 3 seeds x %s items, 10,000 replicates)" % items)
print()
print("scipy runs on one core (numpy's resampling is not threaded); it resamples each row's pooled paired differences, cairn resamples within each seed (the same number of draws per replicate). Wall time is the median, CPU (user + system) the mean, both including reading the files; load average %s before, %s after (a loaded machine stretches wall times, CPU less)." % (load_before, load_after))
print()
print("| command | runs | wall | CPU | scipy / this, wall | scipy / this, CPU |")
print("|---|---|---|---|---|---|")
for name in [allc, "cairn aggregate (1 core)", scipy]:
    print("| %s | %d | %.3f s | %.3f s | %.1fx | %.1fx |" % (name, runs[name], med[name], cpu[name], med[scipy] / med[name], cpu[scipy] / cpu[name]))
ratio = med[scipy] / med[allc]
print()
print("Target: cairn at least 10x faster than scipy (wall), on every core: %.1fx on %s cores, %s." % (ratio, cores, "met" if ratio >= 10 else "MISSED"))
PY
