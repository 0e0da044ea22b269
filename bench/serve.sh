#!/usr/bin/env bash
# bench/serve.sh — the serve kind (docs/serve.md) on the SIMULATED model
# (cmd/cairn-sim-model; no model runs, so the figures are cairn's own
# costs): the time from the apply's start to the first request of a
# consumer (the server's start and readiness checks included), and the
# per-request overhead of an evaluation through a serve stage against the
# same evaluation through a server started by hand (plain endpoints): the
# difference of the evaluate node's durations divided by the items, median
# of BENCH_SERVE_REPEAT runs each. Appends a table to bench/out/results.md
# (bench/run.sh calls it; it runs on its own too).
#
# Arguments: the cairn binary (default bin/cairn, built when missing).
# Environment: BENCH_SERVE_N (items, default 400), BENCH_SERVE_REPEAT (3).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/bench/out
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
N=${BENCH_SERVE_N:-400}
REPEAT=${BENCH_SERVE_REPEAT:-3}
mkdir -p "$OUT"
CAIRN=${1:-$ROOT/bin/cairn}
[ -x "$CAIRN" ] || "$GO" build -o "$ROOT/bin/cairn" ./cmd/cairn
CAIRN=$(cd "$(dirname "$CAIRN")" && pwd)/$(basename "$CAIRN")
SIM=$ROOT/bin/cairn-sim-model
"$GO" build -o "$SIM" ./cmd/cairn-sim-model

WORK=$(mktemp -d /tmp/cairn-bench-serve.XXXXXX)
[ -n "${BENCH_KEEP:-}" ] || trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
mkdir -p workers bundles/seed data weights
cp "$ROOT/testdata/workers/chat_worker.py" workers/
echo "Answer with a number only." >bundles/seed/system.txt
echo "weights" >weights/model.bin
python3 -c "
import json
for i in range($N):
    print(json.dumps({'id': 'q%d' % i, 'question': 'What is %d + %d?' % (i, i + 1), 'answer': str(2 * i + 1)}))
" >data/items.jsonl

port=$((20000 + $$ % 20000))
evaluate() { # $1: endpoints expression, $2: eval seed (a new key each run)
	cat <<EOF
stage "evaluate" "a" {
  worker        = ["python3", "workers/chat_worker.py", "--system-prompt-file", "bundles/seed/system.txt"]
  items         = "data/items.jsonl"
  bundle        = ["bundles/seed/"]
  model         = "sim-model"
  runtime       = { eval_seed = $2 }
  endpoints     = $1
  max_in_flight = 8
  scores        = "out/a.jsonl"
}
EOF
}
served() {
	cat <<EOF
pipeline "bench-serve" {}
stage "serve" "tm" {
  run      = ["$SIM", "--port", "{port}", "--model", "{model}", "--request-log", "requests.jsonl"]
  model    = "sim-model"
  weights  = "weights"
  replicas = 1
  port     = $port
}
$(evaluate stage.tm.endpoints "$1")
EOF
}
plain() {
	cat <<EOF
pipeline "bench-plain" {}
variable "endpoints" {
  type = list(string)
}
$(evaluate var.endpoints "$1")
EOF
}

# journal FIELD: a figure of the last run's journal, by python.
figures() {
	python3 - "$1" <<'EOF'
import json, sys, glob, os, re, datetime
runs = sorted((r for r in glob.glob("cache/runs/*") if os.path.isfile(os.path.join(r, "journal"))), key=os.path.getmtime)
run = runs[-1]
def parse(t):
    return datetime.datetime.fromisoformat(t.replace("Z", "+00:00")[:26] + "+00:00" if "." in t else t.replace("Z", "+00:00"))
start = dur = None
# The journal's records are framed (docs/durability.md): each is a JSON
# object after a binary header.
data = open(os.path.join(run, "journal"), "rb").read().decode("latin-1")
dec = json.JSONDecoder()
for m in re.finditer(r'\{"t":', data):
    try:
        e, _ = dec.raw_decode(data, m.start())
    except ValueError:
        continue
    if e.get("t") == "run_start":
        start = parse(e["time"])
    if e.get("t") == "finished" and e.get("node") == "stage.a":
        dur = e.get("duration_s")
first = None
if sys.argv[1] == "served" and os.path.exists("requests.jsonl"):
    for line in open("requests.jsonl"):
        e = json.loads(line)
        if e.get("user_agent") == "cairn-chat-worker":
            first = parse(e["time"])
            break
print("%s %s" % (dur, (first - start).total_seconds() if first and start else "nan"))
EOF
}

served_dur=() served_first=() plain_dur=()
for r in $(seq "$REPEAT"); do
	served "$r" >served.hcl
	rm -f requests.jsonl
	CAIRN_NO_FSYNC=1 "$CAIRN" apply served.hcl --cache cache --no-color >served.log 2>&1 || { cat served.log >&2; exit 1; }
	read -r d f < <(figures served)
	served_dur+=("$d") served_first+=("$f")

	"$SIM" --port $((port + 50)) --model sim-model >sim.url 2>sim.log &
	simpid=$!
	for _ in $(seq 100); do [ -s sim.url ] && break; sleep 0.05; done
	plain "$((r + 1000))" >plain.hcl
	CAIRN_NO_FSYNC=1 "$CAIRN" apply plain.hcl --cache cache --no-color --var "endpoints=[\"$(head -n1 sim.url)\"]" >plain.log 2>&1 || { cat plain.log >&2; kill "$simpid"; exit 1; }
	kill "$simpid"; wait "$simpid" 2>/dev/null || true
	read -r d _ < <(figures plain)
	plain_dur+=("$d")
done

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
sd=$(median "${served_dur[@]}") pd=$(median "${plain_dur[@]}") first=$(median "${served_first[@]}")
over=$(python3 -c "print('%.1f' % (($sd - $pd) / $N * 1e6))")
load=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo "?")
{
	echo
	echo "## Serve stage, simulated model ($N items, 8 in flight, median of $REPEAT; load average $load)"
	echo
	echo "| figure | measured |"
	echo "| --- | --- |"
	echo "| apply start → first consumer request (server start, readiness checks) | ${first} s |"
	echo "| evaluation through a serve stage | ${sd} s |"
	echo "| the same through a hand-started server (plain endpoints) | ${pd} s |"
	echo "| per-request overhead of the serve stage | ${over} µs |"
} | tee -a "$OUT/results.md"
