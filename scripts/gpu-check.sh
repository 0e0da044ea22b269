#!/usr/bin/env bash
# gpu-check: a short check of cairn on a real NVIDIA machine (under 5 minutes).
# Lists the devices through NVML, runs a 4-variant batch of a tiny GPU-using
# command in waves and in backfill mode, and prints the pinning (from the
# journal's lease records) and the peak memory of each variant.
# On a machine without an NVIDIA GPU it says so and exits 0.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cairn="$here/bin/cairn"
if [ ! -x "$cairn" ]; then
  (cd "$here" && make build >/dev/null)
fi
echo "== cairn gpus"
unset CAIRN_GPUS
"$cairn" gpus | tee /tmp/cairn-gpu-check.gpus
if ! grep -qiE '^ *[0-9]+ +GPU-|nvml' /tmp/cairn-gpu-check.gpus || grep -qi "no NVIDIA driver\|0 GPUs" /tmp/cairn-gpu-check.gpus; then
  echo "gpu-check: no NVIDIA GPU visible through NVML on this machine; nothing to check."
  exit 0
fi

ws=$(mktemp -d /tmp/cairn-gpu-check.XXXXXX)
trap 'rm -rf "$ws"' EXIT
export CAIRN_LEASE_DIR="$ws/leases"
cat > "$ws/work.py" <<'PY'
# Allocates about 1 GiB on the GPU it was given, holds it, reports.
import json, os, sys, time
name = sys.argv[1]
out = {"name": name, "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}
try:
    import torch
    x = torch.empty(256 * 1024 * 1024, dtype=torch.float32, device="cuda")
    x.fill_(1.0)
    torch.cuda.synchronize()
    out["device"] = torch.cuda.get_device_name(0)
    out["sum"] = float(x[:1024].sum().item())
    time.sleep(1.5)
except ImportError:
    out["device"] = "no torch: ran without touching the GPU"
    time.sleep(1.5)
os.makedirs(f"out/{name}", exist_ok=True)
json.dump(out, open(f"out/{name}/result.json", "w"))
print(json.dumps(out))
PY
for mode in waves backfill; do
  cat > "$ws/check.hcl" <<EOF2
pipeline "gpu-check-$mode" {}
stage "waves" "batch" {
  for_each   = ["v0", "v1", "v2", "v3"]
  mode       = "$mode"
  batch_size = 4
  run        = ["python3", "work.py", each.key, "$mode"]
  result     = "out/\${each.key}/result.json"
  log_dir    = "logs/$mode"
  timeout    = "3m"
}
EOF2
  echo
  echo "== batch, mode $mode"
  (cd "$ws" && CAIRN_SAMPLE_INTERVAL=100ms "$cairn" apply check.hcl --replace stage.batch)
  run=$(cd "$ws" && ls -t .cairn/runs | head -1)
  echo "-- pinning and peak memory (cairn show $run)"
  (cd "$ws" && "$cairn" show "$run")
done
