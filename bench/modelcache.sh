#!/usr/bin/env bash
# bench/modelcache.sh — the model-call cache (docs/model-cache.md) against the
# simulated model, on 2 cores (GOMAXPROCS=2, and taskset where there is one):
# requests per second answered from the store (64 connections, 1,000
# distinct requests asked over and over, and as a resumed run asks them:
# each request once, of a cache just started on a store that holds them;
# target 20,000/s) and the latency a
# miss adds to the model's (one client, every request new, median over
# BENCH_MC_N requests; target under 1 ms). The load generator runs in the
# same process as the cache, so its CPU counts against the 2 cores too; its
# anchor is the same load generator against a server that answers at once
# with no lookup (rounds interleaved with the cache's, medians), the most
# the cache could reach on this machine at this load. CPU µs per request
# (the process's, load generator included) is the figure the machine's
# load changes least.
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
load=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo "?")
raw=$(GOMAXPROCS=2 "${pin[@]}" "$GO" test -run '^$' -bench 'ModelCache' -benchtime "${N}x" ./stages/modelcache)
echo "$raw" >&2
field() { echo "$raw" | awk -v b="$1" -v f="$2" '$1 ~ "^" b "-" {for (i=1;i<=NF;i++) if ($i==f) print $(i-1)}'; }
hit=$(field BenchmarkModelCacheHit req/s)
anchor=$(field BenchmarkModelCacheHit anchor-req/s)
hitcpu=$(field BenchmarkModelCacheHit cpu-us/req)
anchorcpu=$(field BenchmarkModelCacheHit anchor-cpu-us/req)
resumed=$(field BenchmarkModelCacheHitResumed req/s)
resumedcpu=$(field BenchmarkModelCacheHitResumed cpu-us/req)
added=$(echo "$raw" | awk '/BenchmarkModelCacheMiss/ {for (i=1;i<=NF;i++) if ($i=="added-p50-us") print $(i-1)}')
direct=$(echo "$raw" | awk '/BenchmarkModelCacheMiss/ {for (i=1;i<=NF;i++) if ($i=="direct-p50-us") print $(i-1)}')
# ok VALUE OP LIMIT: met or MISSED.
ok() { awk -v v="$1" -v l="$3" -v op="$2" 'BEGIN { m = (op == ">=") ? v >= l : v < l; print (v != "" && m) ? "met" : "MISSED" }'; }
{
	echo
	echo "## Model-call cache (2 cores, load average $load at the start)"
	echo
	echo "| figure | measured | target | |"
	echo "| --- | --- | --- | --- |"
	echo "| hits answered from the store (CPU ${hitcpu} µs/request) | ${hit} req/s | 20,000 req/s | $(ok "$hit" ">=" 20000) |"
	echo "| hits of a resumed run: each request once, read from the store's log (CPU ${resumedcpu} µs/request) | ${resumed} req/s | 20,000 req/s | $(ok "$resumed" ">=" 20000) |"
	echo "| anchor: the load generator against a server that answers at once (CPU ${anchorcpu} µs/request) | ${anchor} req/s | no target | |"
	echo "| latency a miss adds (p50; the model alone: ${direct} µs) | ${added} µs | under 1,000 µs | $(ok "$added" "<" 1000) |"
} | tee -a "$OUT/results.md"
