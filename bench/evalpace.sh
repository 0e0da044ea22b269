#!/usr/bin/env bash
# bench/evalpace.sh — evaluations at the pace of the server (#34): an
# evaluate stage with the README's worker and with a worker in Go at 64,
# 256 and 1,024 in flight, an optimize stage's rollout service at 256 in
# flight, and the cold start of 50,000 items with 49,000 in the store, each
# against the server-bound ideal and a minimal client on the same
# simulated model, in turns (bench/evalpace.py says how). Appends its
# table to bench/out/results.md (bench/run.sh calls it; it runs on its own
# too).
#
# Arguments: the cairn binary (default bin/cairn, built when missing), and
# optionally another cairn binary timed in the same rounds (a baseline).
# Environment: BENCH_EVALPACE_ROUNDS (3), BENCH_EVALPACE_ROWS
# (64,256,1024,rollout,cold), BENCH_EVALPACE_PYTHON=0 (no Python worker).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/bench/out
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
mkdir -p "$OUT"
CAIRN=${1:-$ROOT/bin/cairn}
[ -x "$CAIRN" ] || "$GO" build -o "$ROOT/bin/cairn" ./cmd/cairn
CAIRN=$(cd "$(dirname "$CAIRN")" && pwd)/$(basename "$CAIRN")
"$GO" build -o "$ROOT/bin/cairn-sim-model" ./cmd/cairn-sim-model
"$GO" build -o "$ROOT/bin/evalpace" ./bench/evalpace
WORK=$(mktemp -d /tmp/cairn-bench-evalpace.XXXXXX)
[ -n "${BENCH_KEEP:-}" ] || trap 'rm -rf "$WORK"' EXIT
echo "uptime: $(uptime)" >&2
python3 "$ROOT/bench/evalpace.py" "$CAIRN" "$ROOT/bin/evalpace" "$ROOT/bin/cairn-sim-model" "$WORK" ${2:+"$2"} | tee -a "$OUT/results.md"
