#!/usr/bin/env bash
# make demo-decision: seed 003's decision protocol end to end
# (pipelines/memory_decision.hcl): the seal checked, the 48 planned
# processes run in the collection order under the protocol's cap (4
# allocations of 2 GPUs), setup failures replaced under the failure policy,
# the attempt ledger, and the replay of the three decision rules over the
# budgets; then the same replay offline with `cairn replay`.
#
# SIMULATED throughout: the protocol is the fixture of testdata/decision
# (seed 003's protocol with its pins replaced by the digests of stand-in
# files, and an 8-second process timeout), the training job is bin/sim/train
# (no model runs; its peak memory is a made-up function of the slot's
# settings), and the GPUs are eight simulated ones unless CAIRN_GPUS says
# otherwise. A few slots are given faults (testdata/decision/demo-faults.json):
# setup failures, an out-of-memory failure, a hang and a crash.
#
# Each slot's line in the progress says how its process ended: "✓ ok" when
# it completed at its first attempt, "!" and its outcome otherwise (a memory
# failure, a timeout, a crash, a replacement). The protocol's sha256 is
# recorded in the workspace when the fixture is copied (protocol.sha256) and
# every later run checks it (--var protocol_sha256, --expect-sha256): an
# edited protocol is refused.
#
# The workspace is demo/decision/ (git-ignored; DEMO_DIR overrides it). A
# second run takes everything from the cache and shows the same replay;
# delete the folder to start over.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
bin=${DEMO_BIN:-$repo/bin}
cairn=$bin/cairn
ws=${DEMO_DIR:-$repo/demo/decision}
for p in "$cairn" "$bin/sim/train"; do
	[ -x "$p" ] || { echo "demo-decision: $p is missing: run 'make demo-decision' (it builds cairn and the simulated job)" >&2; exit 2; }
done

mkdir -p "$ws"
# The fixture protocol and the files it pins, copied once, and the
# protocol's digest recorded as it was frozen.
if [ ! -e "$ws/decision_protocol.json" ]; then
	cp -R "$repo/testdata/decision/." "$ws/"
	sha256sum "$ws/decision_protocol.json" | cut -d' ' -f1 > "$ws/protocol.sha256"
fi
export CAIRN_GPUS=${CAIRN_GPUS:-sim:8}
cd "$ws"
sha=$(cat protocol.sha256)
train="[\"$bin/sim/train\", \"--duration\", \"${DEMO_TRAIN_DURATION:-1s}\", \"--faults\", \"demo-faults.json\"]"
vars=(--var protocol=decision_protocol.json --var "protocol_sha256=$sha" --var "train_command=$train")

echo "== plan: the seal checked, the 48 slots in the collection order, then the replay"
"$cairn" plan "$repo/pipelines/memory_decision.hcl" "${vars[@]}"
echo
echo "== apply (SIMULATED job on $CAIRN_GPUS)"
"$cairn" apply "$repo/pipelines/memory_decision.hcl" "${vars[@]}" || { status=$?; "$cairn" report; exit "$status"; }
echo
echo "== the attempt ledger: $ws/decision/ledger/attempts.tsv (and attempts.json); the attempts that failed or replaced one"
awk -F'\t' 'NR == 1 || $3 != "" || $10 == "true"' decision/ledger/attempts.tsv | cut -f1-3,7-10 | column -t -s $'\t'
echo
echo "== the replay, offline: cairn replay decision_protocol.json reports/decision/outcomes.json --expect-sha256 $sha"
"$cairn" replay decision_protocol.json reports/decision/outcomes.json --expect-sha256 "$sha" --out ""
if "$cairn" replay decision_protocol.json reports/decision/outcomes.json --expect-sha256 "$sha" --json --out "" | cmp -s - reports/decision/replay.json; then
	echo "The same figures as the pipeline's reports/decision/replay.json."
else
	echo "demo-decision: the offline replay differs from the pipeline's reports/decision/replay.json" >&2
	exit 1
fi
echo
echo "Files: reports/decision/replay.{json,tsv}, reports/decision/outcomes.json, decision/ledger/attempts.{tsv,json}, in $ws"
echo
echo "== The run's report (open it in a browser; trace.tsv beside it)"
"$cairn" report
