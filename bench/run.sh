#!/usr/bin/env bash
# bench/run.sh — what `make bench` runs: cairn against ninja, make and
# snakemake on the same generated graphs (bench/gen), side by side (with
# hyperfine; cold applies in turns, bench/interleave.py), with and without
# fsync. Prints a table of medians and ratios
# and writes bench/out/results.md (bench/out is git-ignored); then
# bench/dsl.sh (large pipeline files), bench/grid.sh (plan and validate of
# setproduct grids, a 10k chain and seed 002's grid), bench/rss.sh (peak memory of plan,
# apply and a 1M-item store), bench/aggregate.sh (cairn
# aggregate against scipy.stats.bootstrap) and bench/modelcache.sh (the
# model-call cache's hits per second and added miss latency) and
# bench/serve.sh (a serve stage's start to the first consumer request, and
# its per-request overhead against a hand-started server) and
# bench/evalpace.sh (evaluations and rollouts against the server-bound
# ideal, and an evaluation's cold start) append their tables, and
# bench/slurm.sh times the slurm executor against sbatch --wait loops.
#
# Environment:
#   BENCH_SIZES=1000,10000,100000   graph sizes (plan and no-op figures)
#   BENCH_COLD_SIZES=1000           sizes whose cold apply is timed side by side
#   BENCH_SHAPES=layered,chain,fan  the other graph shapes (bench/gen -shape), timed after the mixed one
#   BENCH_SHAPE_SIZES=1000,10000    their sizes (plan and no-op figures)
#   BENCH_SHAPE_COLD_SIZES=1000     their sizes whose cold apply is timed
#   BENCH_SNAKEMAKE_MAX=10000       largest size snakemake -n is timed at
#   BENCH_GO_TIME=20000x            -benchtime of the Go throughput benchmarks (wal, items)
#   BENCH_GO_TIME_1M=5x             -benchtime of the 1M-record read and open benchmarks
#   BENCH_WORK=DIR                  where the workspaces go (default: a new /tmp folder)
#   BENCH_KEEP=1                    keep the workspaces afterwards
#   BENCH_SLURM=0                   skip bench/slurm.sh (see there for its own settings)
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/bench/out
SIZES=${BENCH_SIZES:-1000,10000,100000}
COLD_SIZES=${BENCH_COLD_SIZES:-1000}
SNAKE_MAX=${BENCH_SNAKEMAKE_MAX:-10000}
GO_TIME=${BENCH_GO_TIME:-20000x}
GO_TIME_1M=${BENCH_GO_TIME_1M:-5x}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}

log() { printf '\n== %s\n' "$*" >&2; }

# --- tools -------------------------------------------------------------
install_missing() {
	local pkgs=()
	command -v ninja >/dev/null || pkgs+=(ninja-build)
	command -v snakemake >/dev/null || pkgs+=(snakemake)
	command -v hyperfine >/dev/null || pkgs+=(hyperfine)
	command -v python3 >/dev/null || pkgs+=(python3)
	[ -x /usr/bin/time ] || pkgs+=(time)
	command -v make >/dev/null || pkgs+=(make)
	if [ ${#pkgs[@]} -gt 0 ]; then
		local sudo=""
		[ "$(id -u)" = 0 ] || sudo=sudo
		log "installing ${pkgs[*]}"
		$sudo apt-get update -qq
		DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${pkgs[@]}" >/dev/null
	fi
}
install_missing

rm -rf "$OUT"
mkdir -p "$OUT/json"
WORK=${BENCH_WORK:-$(mktemp -d /tmp/cairn-bench.XXXXXX)}
mkdir -p "$WORK"
cleanup() { [ "${BENCH_KEEP:-}" = 1 ] || rm -rf "$WORK"; }
trap cleanup EXIT

log "building bin/cairn and the generator"
"$GO" build -o "$ROOT/bin/cairn" ./cmd/cairn
"$GO" build -o "$WORK/gen" ./bench/gen
CAIRN=$ROOT/bin/cairn
unset CAIRN_CACHE CAIRN_NO_FSYNC CAIRN_NO_MEMO GOGC GOMEMLIMIT

# Facts about this run, for the report.
{
	echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "cores=$(nproc)"
	echo "load=$(cut -d' ' -f1-3 /proc/loadavg)"
	echo "kernel=$(uname -r)"
	echo "go=$("$GO" version | cut -d' ' -f3)"
	echo "ninja=$(ninja --version)"
	echo "make=$(make --version | head -1)"
	echo "snakemake=$(snakemake --version)"
	echo "hyperfine=$(hyperfine --version | cut -d' ' -f2)"
	echo "commit=$(git rev-parse --short HEAD 2>/dev/null || echo none)"
} >"$OUT/facts.txt"

# runs N FAST MEDIUM SLOW: hyperfine runs for a graph of N nodes.
runs() {
	local n=$1
	if [ "$n" -le 2000 ]; then echo "$2"; elif [ "$n" -le 20000 ]; then echo "$3"; else echo "$4"; fi
}

# hf GROUP ARGS...: hyperfine exporting its JSON as GROUP.
hf() {
	local group=$1
	shift
	hyperfine -N --style basic --export-json "$OUT/json/$group.json" "$@" >&2
}

# single GROUP NAME CMD...: one timed run (populating a workspace), as a
# hyperfine-shaped JSON so the report treats it alike.
single() {
	local group=$1 name=$2
	shift 2
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >/dev/null 2>&1
	t1=$(date +%s.%N)
	python3 - "$OUT/json/$group.json" "$name" "$t0" "$t1" <<'EOF'
import json, os, sys
path, name, t0, t1 = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
doc = {"results": []}
if os.path.exists(path):
    doc = json.load(open(path))
doc["results"].append({"command": name, "median": t1 - t0, "mean": t1 - t0, "times": [t1 - t0]})
json.dump(doc, open(path, "w"))
EOF
}

# cold_aside GROUP N RUNS: cold applies with two jobs, side by side, each
# from a fresh empty out/ folder and no cache: the previous run's files are
# moved aside (kept until the end), not deleted. The tools take turns, a
# run each per round (bench/interleave.py), so that the machine's drift
# over the minutes this takes falls on all of them alike.
cold_aside() {
	local group=$1 n=$2 r=$3
	log "$group: cold apply, $n nodes, 2 jobs (after 35 s without deletions)"
	sleep 35
	mkdir -p "$WORK/aside"
	local aside="d=\$(mktemp -d $WORK/aside/XXXXXX) && mv out .cairn .ninja_log .ninja_deps \$d/ 2>/dev/null; mkdir out"
	python3 "$ROOT/bench/interleave.py" "$OUT/json/$group.json" "$r" 1 "$aside" \
		"cairn apply -j2=$CAIRN apply --parallelism 2" \
		"cairn apply -j2 (no fsync)=env CAIRN_NO_FSYNC=1 $CAIRN apply --parallelism 2" \
		"ninja -j2=ninja -j2" \
		"make -j2=make -j2"
}

# populate GROUP N: one cold apply of each tool, so that the no-op figures
# that follow find everything done.
populate() {
	local group=$1 n=$2
	log "$group: populating $n nodes (one run each)"
	rm -rf out .cairn .ninja_log .ninja_deps .snakemake && mkdir out
	single "$group" "cairn apply -j2 (cold, no fsync, one run)" env CAIRN_NO_FSYNC=1 "$CAIRN" apply --parallelism 2
	single "$group" "ninja -j2 (cold, one run)" ninja -j2
	# Outputs written less than 2 s ago cannot be vouched for by their
	# stat information: the up-to-date memo is written from then on.
	sleep 2.5
}

IFS=, read -r -a sizes <<<"$SIZES"
for n in "${sizes[@]}"; do
	dir=$WORK/n$n
	log "generating $n nodes"
	"$WORK/gen" -n "$n" -out "$dir" >&2
	cd "$dir"
	reset='sh -c "rm -rf out .cairn .ninja_log .ninja_deps .snakemake && mkdir out"'

	# Plan on an empty cache, against dry runs.
	log "plan, $n nodes, empty cache"
	eval "$reset"
	"$CAIRN" plan >/dev/null # creates the empty cache folder
	hf "plan-$n" -w "$(runs "$n" 3 1 1)" -r "$(runs "$n" 20 10 3)" \
		-n "cairn plan" "$CAIRN plan" \
		-n "ninja -n" "ninja -n" \
		-n "make -n" "make -n"
	if [ "$n" -le "$SNAKE_MAX" ]; then
		# Seconds a run: fewer of them.
		hf "plan-$n.snakemake" -w 1 -r "$(runs "$n" 5 2 1)" -n "snakemake -n" "snakemake -n -c1 --quiet"
	fi
	if [ "$n" -ge 100000 ]; then
		/usr/bin/time -v "$CAIRN" plan >/dev/null 2>"$OUT/rss-plan-$n.txt"
	fi

	# Cold apply, two jobs, side by side. Two ways to start from nothing:
	# the previous run's files moved aside (kept until the end), or deleted
	# right before. ext4 allocates inodes slowly for about 30 s after many
	# were deleted in their group (it avoids reusing recently deleted
	# ones), and cairn creates about four per node (key lock, stdout and
	# stderr logs, scratch folder) where ninja creates one: the second way
	# measures that as much as the tools.
	if [[ ",$COLD_SIZES," == *",$n,"* ]]; then
		cold_aside "cold-$n" "$n" "$(runs "$n" 8 2 1)"
		log "cold apply, $n nodes, 2 jobs, the previous run deleted right before"
		fresh='sh -c "rm -rf out .cairn .ninja_log .ninja_deps && mkdir out"'
		hf "colddel-$n" -w 1 -r "$(runs "$n" 8 2 1)" \
			--prepare "$fresh" -n "cairn apply -j2 (after rm -rf)" "$CAIRN apply --parallelism 2" \
			--prepare "$fresh" -n "cairn apply -j2 (no fsync, after rm -rf)" "env CAIRN_NO_FSYNC=1 $CAIRN apply --parallelism 2" \
			--prepare "$fresh" -n "ninja -j2 (after rm -rf)" "ninja -j2" \
			--prepare 'sh -c "rm -rf out && mkdir out"' -n "make -j2 (after rm -rf)" "make -j2"
		rm -rf "$WORK/aside"
		if [ "$n" -le 1000 ]; then
			log "cold apply, $n nodes: snakemake -c2 (one run)"
			hf "cold-snakemake-$n" -w 0 -r 1 \
				--prepare 'sh -c "rm -rf out .snakemake && mkdir out"' -n "snakemake -c2" "snakemake -c2 --quiet"
		fi
	fi

	# Everything done: no-op apply and plan with everything cached.
	populate "populate-$n" "$n"
	log "no-op, $n nodes"
	hf "noop-$n" -w 2 -r "$(runs "$n" 20 10 3)" \
		-n "cairn apply (no-op)" "$CAIRN apply --parallelism 2" \
		-n "cairn apply (no-op, no fsync)" "env CAIRN_NO_FSYNC=1 $CAIRN apply --parallelism 2" \
		-n "cairn apply (no-op, full evaluation)" "env CAIRN_NO_MEMO=1 $CAIRN apply --parallelism 2" \
		-n "cairn plan (cached)" "$CAIRN plan" \
		-n "cairn plan (cached, full evaluation)" "env CAIRN_NO_MEMO=1 $CAIRN plan" \
		-n "ninja (no-op)" "ninja -j2" \
		-n "make (no-op)" "make -j2"
	cd "$ROOT"
	[ "${BENCH_KEEP:-}" = 1 ] || rm -rf "$dir"
done

# The other shapes (bench/gen -shape): layered, a long chain, a wide
# fan-out and fan-in; every node one `sh -c` writing its own file. Cold
# runs start from a fresh empty out/ folder and no cache for every tool:
# the previous run's files are moved aside, never deleted in the timed
# command or right before it.
IFS=, read -r -a shapes <<<"${BENCH_SHAPES:-layered,chain,fan}"
IFS=, read -r -a shape_sizes <<<"${BENCH_SHAPE_SIZES:-1000,10000}"
SHAPE_COLD_SIZES=${BENCH_SHAPE_COLD_SIZES:-1000}
for shape in "${shapes[@]}"; do
	[ -n "$shape" ] || continue
	for n in "${shape_sizes[@]}"; do
		dir=$WORK/$shape$n
		log "generating $shape, $n nodes"
		"$WORK/gen" -shape "$shape" -n "$n" -out "$dir" >&2
		cd "$dir"
		log "$shape, plan, $n nodes, empty cache"
		"$CAIRN" plan >/dev/null
		hf "plan@$shape-$n" -w "$(runs "$n" 3 1 1)" -r "$(runs "$n" 20 10 3)" \
			-n "cairn plan" "$CAIRN plan" \
			-n "ninja -n" "ninja -n" \
			-n "make -n" "make -n"
		if [[ ",$SHAPE_COLD_SIZES," == *",$n,"* ]]; then
			cold_aside "cold@$shape-$n" "$n" "$(runs "$n" 8 2 1)"
			rm -rf "$WORK/aside"
		fi
		populate "populate@$shape-$n" "$n"
		log "$shape, no-op, $n nodes"
		hf "noop@$shape-$n" -w 2 -r "$(runs "$n" 20 10 3)" \
			-n "cairn apply (no-op)" "$CAIRN apply --parallelism 2" \
			-n "cairn plan (cached)" "$CAIRN plan" \
			-n "ninja (no-op)" "ninja -j2" \
			-n "make (no-op)" "make -j2"
		cd "$ROOT"
		[ "${BENCH_KEEP:-}" = 1 ] || rm -rf "$dir"
	done
done

log "Go benchmarks: journal (storage/wal) and item store (stages/items)"
{
	# Throughput at steady state: many records or items per run. Opening
	# or reading a million records: a few runs.
	"$GO" test -run '^$' -bench 'AppendGroupCommit|EvaluateNoopWorker' -benchtime "$GO_TIME" ./storage/wal ./stages/items
	"$GO" test -run '^$' -bench 'Read1M|OpenStore1M' -benchtime "$GO_TIME_1M" ./storage/wal ./stages/items
} 2>&1 | grep -E '^(Benchmark|ok|FAIL|PASS|goos|goarch|cpu|pkg)' | tee "$OUT/go-bench.txt" >&2

log "Batch scheduling on a virtual clock: backfill vs waves over 1,000 seeded duration sets"
"$GO" test -run '^$' -bench BatchSchedule -benchtime 1x ./engine 2>&1 |
	grep -E '^Benchmark' | tee "$OUT/batch-sim.txt" >&2

python3 - "$OUT" <<'EOF'
import glob, json, os, re, sys

out = sys.argv[1]
facts = dict(l.rstrip("\n").split("=", 1) for l in open(os.path.join(out, "facts.txt")) if "=" in l)

def load(group):
    # A group's figures may come from several hyperfine runs: GROUP.json
    # and GROUP.*.json.
    paths = glob.glob(os.path.join(out, "json", group + ".json")) + \
        sorted(glob.glob(os.path.join(out, "json", group + ".*.json")))
    if not paths:
        return None
    res = {}
    for p in paths:
        for r in json.load(open(p))["results"]:
            res[r["command"]] = r["median"]
    return res

def ms(s):
    return "%.1f ms" % (s * 1e3) if s < 10 else "%.2f s" % s

sizes = sorted({int(m.group(1)) for f in glob.glob(os.path.join(out, "json", "*.json"))
                for m in [re.search(r"^[a-z-]+-(\d+)(\.[a-z]+)?\.json$", os.path.basename(f))] if m})
# The other shapes' groups are named GROUP@SHAPE-N.
shaped = sorted({(m.group(1), int(m.group(2))) for f in glob.glob(os.path.join(out, "json", "*@*.json"))
                 for m in [re.search(r"@([a-z]+)-(\d+)\.json$", f)] if m})
lines = []
w = lines.append
w("# cairn benchmarks")
w("")
w("Machine: %s cores, load average at start %s, kernel %s; %s, ninja %s, %s, snakemake %s, hyperfine %s; commit %s, %s." % (
    facts.get("cores"), facts.get("load"), facts.get("kernel"), facts.get("go"), facts.get("ninja"),
    facts.get("make"), facts.get("snakemake"), facts.get("hyperfine"), facts.get("commit"), facts.get("date")))
w("")
w("Medians of hyperfine runs (cold applies from fresh folders: of runs taken in turns, a run of each tool per round, by bench/interleave.py); the ratio is the command's median over the reference's (below 1: faster than it).")
w("Graphs from bench/gen: distinct stages chained ten at a time, chains of four for_each stages over 50 keys")
w("(each instance after the previous stage's same key), one fan-in per chain; every node is `touch out/NAME`.")

groups = [
    ("plan", "Plan, empty cache (dry runs)", "ninja -n"),
    ("cold", "Cold apply, 2 jobs", "ninja -j2"),
    ("colddel", "Cold apply, 2 jobs, the previous run deleted right before", "ninja -j2 (after rm -rf)"),
    ("cold-snakemake", "Cold apply, 2 jobs: snakemake (one run)", None),
    ("populate", "Cold apply (one run each, to populate the no-op figures)", "ninja -j2 (cold, one run)"),
    ("noop", "Everything done: no-op apply and cached plan", "ninja (no-op)"),
]
found = {}
def timings(r, ref):
    """One group's table: each command's median and its ratio to ref."""
    w("| command | median | ratio to %s |" % (ref or "-"))
    w("|---|---:|---:|")
    for cmd, med in r.items():
        ratio = "%.2f" % (med / r[ref]) if ref and ref in r and r[ref] > 0 else ""
        w("| `%s` | %s | %s |" % (cmd, ms(med), ratio))

for key, title, ref in groups:
    for n in sizes:
        r = load("%s-%d" % (key, n))
        if not r:
            continue
        found[(key, n)] = r
        w("")
        w("## %s — %d nodes" % (title, n))
        w("")
        timings(r, ref)

shape_about = {
    "mixed": "the graph above",
    "layered": "4 for_each stages x N/4 keys, node k of stage i after stage i-1's node k",
    "chain": "a chain of N distinct stages, each after the one before",
    "fan": "one stage, N-2 instances after it, one stage after all of them",
}
for shape, n in shaped:
    for key, title, ref in groups:
        r = load("%s@%s-%d" % (key, shape, n))
        if not r:
            continue
        found[(key + "@" + shape, n)] = r
        w("")
        w("## %s — %s, %d nodes" % (title, shape, n))
        w("")
        w("Shape: %s; every node `sh -c \"echo NAME > out/NAME\"`." % shape_about.get(shape, shape))
        w("")
        timings(r, ref)

rss = {}
for n in sizes:
    p = os.path.join(out, "rss-plan-%d.txt" % n)
    if os.path.exists(p):
        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(p).read())
        if m:
            rss[n] = int(m.group(1)) * 1024
            w("")
            w("Peak RSS of `cairn plan`, %d nodes, empty cache (/usr/bin/time -v): %.0f MiB." % (n, rss[n] / 2**20))

def get(key, n, cmd):
    return found.get((key, n), {}).get(cmd)

checks = []
def check(what, ok, measured, stricter=False):
    # stricter: a figure held to a target it is not the issue's reading of
    # (the full evaluation is the first apply after an edit, not a no-op);
    # shown for comparison.
    if ok is None:
        return
    verdict = "met" if ok else ("over (stricter reading, not the target)" if stricter else "MISSED")
    checks.append("| %s | %s | %s |" % (what, measured, verdict))

for n in sizes:
    plan, nin, snk = get("plan", n, "cairn plan"), get("plan", n, "ninja -n"), get("plan", n, "snakemake -n")
    if plan and nin and n == 1000:
        check("plan 1k within 5x of ninja -n", plan / nin <= 5, "%.2fx (%s vs %s)" % (plan / nin, ms(plan), ms(nin)))
    if plan and snk and n == 1000:
        check("plan 1k >= 30x faster than snakemake -n", snk / plan >= 30, "%.0fx (%s vs %s)" % (snk / plan, ms(plan), ms(snk)))
    if plan and n == 10000:
        check("plan 10k <= 150 ms", plan <= 0.150, ms(plan))
    if plan and n == 100000:
        check("plan 100k <= 3 s", plan <= 3.0, ms(plan))
    if n in rss:
        check("plan %dk peak RSS <= 1 GiB" % (n // 1000), rss[n] <= 2**30, "%.0f MiB" % (rss[n] / 2**20))
    for key, cmd, ref in (("cold", "cairn apply -j2", "ninja -j2"), ("cold", "cairn apply -j2 (no fsync)", "ninja -j2"),
                          ("colddel", "cairn apply -j2 (after rm -rf)", "ninja -j2 (after rm -rf)"),
                          ("colddel", "cairn apply -j2 (no fsync, after rm -rf)", "ninja -j2 (after rm -rf)")):
        c, r = get(key, n, cmd), get(key, n, ref)
        if c and r and n == 1000:
            check("cold apply 1k, `%s` <= 1.5x `%s`" % (cmd, ref), c / r <= 1.5, "%.2fx (%s vs %s)" % (c / r, ms(c), ms(r)))
    for cmd in ("cairn apply (no-op)", "cairn apply (no-op, no fsync)", "cairn plan (cached)",
                "cairn apply (no-op, full evaluation)", "cairn plan (cached, full evaluation)"):
        c, r = get("noop", n, cmd), get("noop", n, "ninja (no-op)")
        if not c:
            continue
        strict = "full evaluation" in cmd
        if r and n == 1000:
            check("%s 1k within 5x of ninja no-op" % cmd, c / r <= 5, "%.2fx (%s vs %s)" % (c / r, ms(c), ms(r)), strict)
        if n == 10000:
            check("%s 10k <= 150 ms" % cmd, c <= 0.150, ms(c), strict)
        if n == 100000:
            check("%s 100k <= 3 s" % cmd, c <= 3.0, ms(c), strict)
# The targets every shape is held to: cold durable apply within 1.3x of
# ninja -j2, plan of 10k nodes on an empty cache at most 150 ms, no-op
# within 1.5x of ninja at 1k and 10k.
def size(n):
    return "%dk" % (n // 1000) if n >= 1000 and n % 1000 == 0 else str(n)

for shape in ["mixed"] + sorted({s for s, _ in shaped}):
    suffix = "" if shape == "mixed" else "@" + shape
    for n in sorted(set(sizes) | {m for s, m in shaped if s == shape}):
        c, r = get("cold" + suffix, n, "cairn apply -j2"), get("cold" + suffix, n, "ninja -j2")
        if c and r:
            check("%s %s: cold durable apply within 1.3x of `ninja -j2`" % (shape, size(n)), c / r <= 1.3,
                  "%.2fx (%s vs %s)" % (c / r, ms(c), ms(r)))
        plan = get("plan" + suffix, n, "cairn plan")
        if plan and n == 10000:
            check("%s 10k: plan, empty cache, <= 150 ms" % shape, plan <= 0.150, ms(plan))
        c, r = get("noop" + suffix, n, "cairn apply (no-op)"), get("noop" + suffix, n, "ninja (no-op)")
        if c and r and n in (1000, 10000):
            check("%s %s: no-op within 1.5x of ninja" % (shape, size(n)), c / r <= 1.5,
                  "%.2fx (%s vs %s)" % (c / r, ms(c), ms(r)))

gb = os.path.join(out, "go-bench.txt")
if os.path.exists(gb):
    for l in open(gb):
        m = re.match(r"BenchmarkAppendGroupCommit/(durable|nosync|durable-shared)-\d+\s.*?([\d.]+) records/s", l)
        if m and m.group(1) == "durable":
            check("journal, durable, 8 producers >= 50,000 records/s", float(m.group(2)) >= 50000, "%.0f records/s" % float(m.group(2)))
        m = re.match(r"BenchmarkRead1M-\d+\s+\d+\s+(\d+) ns/op", l)
        if m:
            check("journal, reading 1M records <= 1 s", int(m.group(1)) <= 1e9, ms(int(m.group(1)) / 1e9))
if checks:
    w("")
    w("## Targets")
    w("")
    w("| target | measured | |")
    w("|---|---|---|")
    lines.extend(checks)

gb = os.path.join(out, "go-bench.txt")
if os.path.exists(gb):
    w("")
    w("## Journal and item store (go test -bench, storage/wal and stages/items)")
    w("")
    w("```")
    lines.extend(l.rstrip("\n") for l in open(gb))
    w("```")

bs = os.path.join(out, "batch-sim.txt")
if os.path.exists(bs):
    w("")
    w("## GPU batch: backfill vs waves (virtual clock, 1,000 seeded sets of 4 durations per GPU count)")
    w("")
    w("| free GPUs | backfill / waves makespan (mean) | waves above lower bound | backfill above lower bound |")
    w("|---|---|---|---|")
    for l in open(bs):
        m = re.match(r"BenchmarkBatchSchedule/gpus=(\d+)\S*\s+\d+\s+\d+ ns/op\s+(.*)", l)
        if not m:
            continue
        metrics = dict((k, float(v)) for v, k in re.findall(r"([\d.]+) (\S+)", m.group(2)))
        w("| %s | %.3f | %.1f%% | %.1f%% |" % (m.group(1), metrics.get("backfill/waves", 0),
          metrics.get("waves_%over_LB", 0), metrics.get("backfill_%over_LB", 0)))
    w("")
    w("Lower bound: max(longest, total/N). Backfill is never worse than waves on any set (engine TestBackfillNeverWorseThanWaves).")

text = "\n".join(lines) + "\n"
open(os.path.join(out, "results.md"), "w").write(text)
sys.stdout.write(text)
EOF
echo >&2
echo "wrote $OUT/results.md" >&2
bash "$ROOT/bench/dsl.sh" "$CAIRN"
bash "$ROOT/bench/grid.sh" "$CAIRN"
bash "$ROOT/bench/rss.sh" "$CAIRN"
bash "$ROOT/bench/aggregate.sh" "$CAIRN"
bash "$ROOT/bench/modelcache.sh"
bash "$ROOT/bench/serve.sh" "$CAIRN"
bash "$ROOT/bench/evalpace.sh" "$CAIRN"
# The slurm executor against sbatch --wait loops, on a local cluster
# (BENCH_SLURM=0 skips it; it needs root to start the cluster).
if [ "${BENCH_SLURM:-1}" = 1 ]; then
	bash "$ROOT/bench/slurm.sh" "$CAIRN"
fi
