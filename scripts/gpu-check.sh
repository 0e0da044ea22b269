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

# A serve stage with vLLM (docs/serve.md): one replica on one GPU, two
# evaluate stages sharing it, and no server process left once apply ends.
# CAIRN_GPU_CHECK_MODEL names the model (default a small one, which must be
# in the Hugging Face cache or downloadable).
echo
echo "== serve (vLLM)"
if command -v vllm >/dev/null 2>&1; then
  vllm=("vllm")
elif python3 -c 'import vllm' 2>/dev/null; then
  vllm=("python3" "-m" "vllm.entrypoints.cli.main")
else
  echo "gpu-check: vLLM is not installed here (no vllm command, no vllm module for python3): serve check skipped."
  exit 0
fi
model=${CAIRN_GPU_CHECK_MODEL:-Qwen/Qwen2.5-0.5B-Instruct}
mkdir -p "$ws/serve/workers"
cp "$here/testdata/workers/chat_worker.py" "$ws/serve/workers/"
python3 - "$ws/serve/items.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(16):
        f.write(json.dumps({"id": f"q{i}", "question": f"What is {i} + {2 * i + 1}? Answer with the number only.", "answer": str(3 * i + 1)}) + "\n")
PY
run_json=$(printf '"%s", ' "${vllm[@]}")
cat > "$ws/serve/serve.hcl" <<EOF2
pipeline "gpu-check-serve" {}
stage "serve" "task" {
  run           = [${run_json}"serve", "$model", "--host", "127.0.0.1", "--port", "{port}",
                   "--tensor-parallel-size", "{gpus}", "--max-model-len", "4096", "--gpu-memory-utilization", "0.5"]
  model         = "$model"
  gpus          = 1
  replicas      = 1
  port          = 8000
  start_timeout = "15m"
}
stage "evaluate" "first" {
  worker        = ["python3", "workers/chat_worker.py"]
  items         = "items.jsonl"
  model         = "$model"
  endpoints     = stage.task.endpoints
  max_in_flight = 8
  scores        = "out/first.jsonl"
}
stage "evaluate" "second" {
  worker        = ["python3", "workers/chat_worker.py"]
  items         = "items.jsonl"
  model         = "$model"
  runtime       = { temperature = 0, pass = 2 }
  endpoints     = stage.task.endpoints
  max_in_flight = 8
  scores        = "out/second.jsonl"
}
EOF2
(cd "$ws/serve" && "$cairn" apply serve.hcl)
run=$(cd "$ws/serve" && ls -t .cairn/runs | head -1)
echo "-- the serve node's journal and logs (cairn show $run)"
(cd "$ws/serve" && "$cairn" show "$run")
left=$(pgrep -f -- "serve $model" || true)
if [ -n "$left" ]; then
  echo "gpu-check: FAILED: a vLLM server is still running after apply: pid(s) $left"
  exit 1
fi
echo "-- no vLLM server left running"
