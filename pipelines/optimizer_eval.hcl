# Two prompt-optimizer methods on one cell and seed, each evaluated against
# the seed bundle it started from (the baseline) and the incumbent bundle it
# proposed. The seed-bundle evaluations of the two methods have the same item
# keys (the bundle, items, model, runtime and worker are the same; the method
# and the stage are not part of an item key), so the task model sees each of
# their items once: whichever node claims an item first evaluates it, the
# other reads it from the shared item store. A later apply, or another
# pipeline on the same --cache, reuses them too.
#
# With a simulated task model (it runs no model; see docs/worker-protocol.md):
#
#   go run ./cmd/cairn-sim-model --addr 127.0.0.1:8000 &
#   TASK_ENDPOINTS=http://127.0.0.1:8000/v1 cairn apply pipelines/optimizer_eval.hcl
#
# With vLLM replicas serving the task model on ports 8000 and 8001:
#
#   cairn apply pipelines/optimizer_eval.hcl --var model=Qwen/Qwen3.5-9B \
#     --var 'task_endpoints=["http://localhost:8000/v1","http://localhost:8001/v1"]'
#
# Progress (a line every 10 items per evaluation) goes to the apply output;
# per-item scores land in runs/<method>/seed<seed>/, and each method's
# comparison in runs/<method>/seed<seed>/result.json.

pipeline "optimizer-eval" {
  description = "Seed-bundle baseline (shared across methods) and each method's incumbent on one cell"
}

variable "methods" {
  type        = list(string)
  default     = ["mapro", "gepa"]
  description = "Optimizer methods; each has its incumbent bundle in testdata/optimizer_eval/bundles/<method>/."
}

variable "model" {
  type        = string
  default     = "sim-model"
  description = "The task model's id, as every endpoint serves it (GET /v1/models)."
}

variable "task_endpoints" {
  type        = list(string)
  default     = []
  description = "Task model base URLs, used round robin; empty: TASK_ENDPOINTS, then VLLM_BASE_URL."
}

variable "seed" {
  type    = number
  default = 0
}

variable "dataset" {
  type        = string
  default     = "testdata/optimizer_eval/arith_val.jsonl"
  description = "The validation split, one JSON item per line with id, question and answer."
}

locals {
  bundles = "testdata/optimizer_eval/bundles"
  # The cell: everything about the runtime that changes a result. It enters
  # every item key, so another cell never reuses these evaluations.
  runtime = {
    topology      = "single"
    framework     = "plain"
    communication = "none"
    team_size     = 1
    temperature   = 0
    max_tokens    = 64
    eval_seed     = var.seed
  }
  worker = ["python3", "testdata/workers/chat_worker.py", "--system-prompt-file"]
}

# Each method's baseline. Same item keys for every method: evaluated once.
stage "evaluate" "seed_bundle" {
  for_each = toset(var.methods)

  worker        = concat(local.worker, ["${local.bundles}/seed/system.txt"])
  items         = var.dataset
  bundle        = ["${local.bundles}/seed/"]
  model         = var.model
  runtime       = local.runtime
  endpoints     = var.task_endpoints
  max_in_flight = 8
  item_timeout  = "10m"
  retry_infra   = 3
  scores        = "runs/${each.key}/seed${var.seed}/seed_scores.jsonl"
}

# Each method's incumbent: its own bundle, so its own item keys.
stage "evaluate" "incumbent" {
  for_each = toset(var.methods)

  worker        = concat(local.worker, ["${local.bundles}/${each.key}/system.txt"])
  items         = var.dataset
  bundle        = ["${local.bundles}/${each.key}/"]
  model         = var.model
  runtime       = local.runtime
  endpoints     = var.task_endpoints
  max_in_flight = 8
  item_timeout  = "10m"
  retry_infra   = 3
  scores        = "runs/${each.key}/seed${var.seed}/incumbent_scores.jsonl"
}

# Each method's comparison: baseline and deployed means, delta in points.
stage "command" "compare" {
  for_each = toset(var.methods)

  run = ["sh", "-c", "mkdir -p \"$(dirname \"$1\")\" && printf '%s\\n' \"$2\" > \"$1\"", "compare",
    "runs/${each.key}/seed${var.seed}/result.json",
    jsonencode({
      method        = each.key
      seed          = var.seed
      baseline_mean = stage.seed_bundle[each.key].result.mean_score
      deployed_mean = stage.incumbent[each.key].result.mean_score
      delta_pp      = tonumber(format("%.2f", 100 * (stage.incumbent[each.key].result.mean_score - stage.seed_bundle[each.key].result.mean_score)))
      items         = stage.incumbent[each.key].result.item_count
    }),
  ]
  result = "runs/${each.key}/seed${var.seed}/result.json"

  postcondition {
    condition     = self.result.items == stage.seed_bundle[each.key].result.item_count
    error_message = "The incumbent was scored on ${self.result.items} items, the baseline on ${stage.seed_bundle[each.key].result.item_count}."
  }
}
