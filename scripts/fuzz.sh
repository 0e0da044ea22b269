#!/usr/bin/env bash
# scripts/fuzz.sh FUZZTIME PKG:NAME... — run each fuzzer for FUZZTIME, one
# after the other (make fuzz, make fuzz-short). A failing fuzzer does not
# stop the others: each one's result is listed at the end, and the status
# is non-zero when any failed (a failing input is written under the
# package's testdata/fuzz, where go test then runs it as a test).
#
# Go 1.26's fuzzing coordinator can report its own -fuzztime deadline as a
# failure ("context deadline exceeded", no failing input) when a worker is
# slow to stop on a loaded machine; Go 1.27 fixed the race. Such a run
# fuzzed for its whole time and found nothing: it is listed as ok, saying
# so, not as a failure. Any other failure, or a failing input written,
# fails.
set -uo pipefail
GO=${GO:-go}
time=$1
shift
failed=0
summary=""
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for f in "$@"; do
	pkg=${f%%:*}
	name=${f##*:}
	echo "== $name ($pkg), $time"
	if "$GO" test -run '^$' -fuzz "^$name\$" -fuzztime "$time" -fuzzminimizetime 5s "$pkg" 2>&1 | tee "$out"; then
		summary+=$'\n'"  ok      $name ($pkg)"
	elif ! grep -q "Failing input written to" "$out" &&
		[ "$(grep -c -- '--- FAIL' "$out")" = 1 ] &&
		grep -A1 -- "^--- FAIL: $name (" "$out" | tail -n 1 | grep -qx '    context deadline exceeded'; then
		summary+=$'\n'"  ok      $name ($pkg): its time ran out with no failing input (Go's fuzzing deadline reported as a failure)"
	else
		failed=$((failed + 1))
		summary+=$'\n'"  FAILED  $name ($pkg)"
	fi
done
echo "== fuzzers, $time each:$summary"
if [ $failed -gt 0 ]; then
	echo "$failed fuzzer(s) failed"
	exit 1
fi
echo "all fuzzers passed"
