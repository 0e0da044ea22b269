#!/usr/bin/env bash
# bench/modelcache.sh — the model-call cache (docs/model-cache.md) against the
# simulated model, on 2 cores (GOMAXPROCS=2, and taskset where there is one):
# requests per second answered from the store (64 concurrent clients, 1,000
# distinct requests asked over and over; target 20,000/s) and the latency a
# miss adds to the model's (one client, every request new, median over
# BENCH_MC_N requests; target under 1 ms). The load generator runs in the
# same process as the cache, so its CPU counts against the 2 cores too.
# Appends a table to bench/out/results.md (bench/run.sh calls it; it runs on
# its own too).
#
# Environment: BENCH_MC_N (requests per figure, default 20000).
set -euo pipefail

cd "$(dirname "$0")/.."
OUT=$PWD/bench/out
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
N=${BENCH_MC_N:-20000}
mkdir -p "$OUT"
pin=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then pin=(taskset -c 0,1); fi
raw=$(GOMAXPROCS=2 "${pin[@]}" "$GO" test -run '^$' -bench 'ModelCache' -benchtime "${N}x" ./stages/modelcache)
echo "$raw" >&2
hit=$(echo "$raw" | awk '/BenchmarkModelCacheHit/ {for (i=1;i<=NF;i++) if ($i=="req/s") print $(i-1)}')
added=$(echo "$raw" | awk '/BenchmarkModelCacheMiss/ {for (i=1;i<=NF;i++) if ($i=="added-p50-us") print $(i-1)}')
direct=$(echo "$raw" | awk '/BenchmarkModelCacheMiss/ {for (i=1;i<=NF;i++) if ($i=="direct-p50-us") print $(i-1)}')
load=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo "?")
{
	echo
	echo "## Model-call cache (2 cores, load average $load at the start)"
	echo
	echo "| figure | measured | target |"
	echo "| --- | --- | --- |"
	echo "| hits answered from the store | ${hit} req/s | 20,000 req/s |"
	echo "| latency a miss adds (p50; the model alone: ${direct} µs) | ${added} µs | under 1,000 µs |"
} | tee -a "$OUT/results.md"
