# Inspect as a cairn stage, through cairn's model-call cache
# (docs/model-cache.md): a second run, or another pipeline on the same
# cache, sends no request to the model.
#
#   cairn apply pipelines/inspect_cached.hcl \
#     --var endpoint=http://gpu1:8000/v1 --var model=Qwen/Qwen3-8B \
#     --var inspect=.venv/bin/inspect
#   cairn import inspect out/inspect/<log>.eval --out out/inspect/items.jsonl

variable "endpoint" {
  type        = string
  description = "The model server's base URL, ending in /v1 (vLLM, or cairn-sim-model)."
}
variable "model" {
  type    = string
  default = "sim-model"
}
variable "inspect" {
  type        = string
  description = "The inspect command of an environment with inspect-ai and openai installed."
  default     = "inspect"
}
variable "out" {
  type    = string
  default = "out/inspect"
}

stage "command" "inspect" {
  run = [var.inspect, "eval", "pipelines/model_cache/inspect/arith.py",
    "--model", "openai-api/cached/${var.model}",
  "--log-dir", var.out, "--no-ansi", "--display", "plain"]
  inputs  = ["pipelines/model_cache/inspect", "pipelines/model_cache/lm_eval/arith.jsonl"]
  outputs = [var.out]
  env = {
    CACHED_BASE_URL = self.model_cache.url
    CACHED_API_KEY  = "unused"
  }
  model_cache = { endpoints = [var.endpoint] }
}
