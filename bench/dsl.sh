#!/usr/bin/env bash
# bench/dsl.sh — how long `cairn validate` takes, and how much memory, on
# large pipeline files: 20,000 locals in a chain, a 5 MB file of nested
# lists, and the same file ending in a syntax error. Each is run three
# times; the median time and the largest peak RSS are compared with the
# targets and appended to bench/out/results.md as a table (bench/run.sh
# calls it last; it runs on its own too).
#
#   bench/dsl.sh [CAIRN]   CAIRN: the binary (default: build bin/cairn)
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/bench/out
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
CAIRN=${1:-}
if [ -z "$CAIRN" ]; then
	"$GO" build -o "$ROOT/bin/cairn" ./cmd/cairn
	CAIRN=$ROOT/bin/cairn
fi
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/cairn-bench-dsl.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

python3 - "$WORK" <<'EOF'
import os, random, sys
work = sys.argv[1]
n = 20000
with open(os.path.join(work, "locals20k.hcl"), "w") as f:
    f.write('pipeline "locals" {}\n\nlocals {\n  l0 = 0\n')
    for i in range(1, n):
        f.write("  l%d = local.l%d + 1\n" % (i, i - 1))
    f.write('}\n\nstage "command" "s" {\n  run = ["echo", "${local.l%d}"]\n}\n' % (n - 1))
random.seed(1)
def nest(d):
    if d == 0:
        return str(random.randint(0, 999))
    return "[" + ", ".join(nest(d - 1) for _ in range(3)) + "]"
parts, size, i = ['pipeline "nested" {}\n\nlocals {\n'], 0, 0
while size < 5000000:
    line = "  v%d = %s\n" % (i, nest(5))
    parts.append(line)
    size += len(line)
    i += 1
parts.append('}\n\nstage "command" "s" {\n  run = ["echo", "${length(local.v0)}"]\n}\n')
src = "".join(parts)
open(os.path.join(work, "nested5m.hcl"), "w").write(src)
open(os.path.join(work, "nested5m_syntax_error.hcl"), "w").write(src + 'stage "command" "t" {\n  run = [\n')
EOF

# measure NAME FILE WANT_EXIT MAX_S MAX_MIB: three runs of cairn validate.
rows=()
measure() {
	local name=$1 file=$2 want=$3 max_s=$4 max_mib=$5
	local times=() cpus=() rss=0 code t u s kib
	for _ in 1 2 3; do
		set +e
		/usr/bin/time -f '%e %U %S %M' -o "$WORK/time" "$CAIRN" validate "$file" >/dev/null 2>&1
		code=$?
		set -e
		# time says "Command exited with non-zero status" first then.
		read -r t u s kib < <(tail -1 "$WORK/time")
		times+=("$t")
		cpus+=("$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')")
		[ "$kib" -gt "$rss" ] && rss=$kib
	done
	local med cpu
	med=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 2p)
	cpu=$(printf '%s\n' "${cpus[@]}" | sort -n | sed -n 2p)
	local mib=$((rss / 1024))
	local verdict=met
	if [ "$code" != "$want" ]; then
		verdict="MISSED (exit $code, want $want)"
	elif ! awk -v t="$med" -v m="$max_s" 'BEGIN { exit !(t < m) }' || [ "$mib" -ge "$max_mib" ]; then
		verdict=MISSED
	fi
	rows+=("| $name | $(du -h "$file" | cut -f1) | ${med} s | ${cpu} s | ${mib} MiB | under ${max_s} s and ${max_mib} MiB | $verdict |")
	echo "$name: ${med} s (CPU ${cpu} s), ${mib} MiB: $verdict" >&2
}
measure "20,000 locals in a chain" "$WORK/locals20k.hcl" 0 1 500
measure "5 MB of nested lists" "$WORK/nested5m.hcl" 0 5 500
measure "5 MB of nested lists ending in a syntax error" "$WORK/nested5m_syntax_error.hcl" 2 5 500

{
	echo ""
	echo "## Large pipeline files (cairn validate; median of 3, largest peak RSS)"
	echo ""
	echo "The target is on the wall-clock time; CPU is user + system time, which a loaded machine inflates less."
	echo ""
	echo "| file | size | time | CPU | peak RSS | target | |"
	echo "|---|---|---|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
} | tee -a "$OUT/results.md"
