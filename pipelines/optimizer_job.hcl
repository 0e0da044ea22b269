# One prompt-optimizer job: a method on a cell (dataset, runtime, task model)
# with one optimizer seed, from the seed bundle to result.json. It replaces the
# seed's `python -m optimizers.protocol.run`:
#
#   cairn apply pipelines/optimizer_job.hcl --var method=simgepa --var dataset=sums \
#     --var topology=single --var model=sim --var seed=0
#
# The phases, each its own nodes: job (seals job.json) -> optimize (the
# method, metered against the budget) -> validate (seed and incumbent bundles
# on the validation split, uncharged) -> select -> test (seed and deployed
# bundles on the test split, uncharged) -> result (test.json, result.json and
# the summary line). The out folder holds job.json, optimization.json,
# optimization/, selection.json, test.json and result.json
# (docs/job-artifacts.md). With the simulated task model and method
# (testdata/optimizer/): `make demo-optimizer`.

pipeline "optimizer-job" {
  description = "One optimizer job: optimize -> validate -> select -> test, sealed in its out folder"
}

variable "method" {
  type        = string
  description = "The optimizer method: a key of the grid's methods."
}

variable "dataset" {
  type        = string
  description = "The dataset; its splits are DATA_DIR/DATASET/{train,val,test}.jsonl."
}

variable "topology" {
  type        = string
  description = "The base topology, or a registry key naming the whole runtime."
}

variable "framework" {
  type    = string
  default = ""
}

variable "communication" {
  type    = string
  default = ""
}

variable "team_size" {
  type    = number
  default = 0
}

variable "model" {
  type        = string
  description = "The task model's short name (a key of the grid's models)."
}

variable "seed" {
  type = number
  validation {
    condition     = var.seed >= 0 && floor(var.seed) == var.seed
    error_message = "The optimizer seed is a whole number, 0 or more."
  }
}

variable "budget" {
  type        = number
  default     = 600
  description = "Rollouts the method may charge; below 600 the job is a non-conformant smoke run."
}

variable "out" {
  type        = string
  default     = ""
  description = "The job's out folder (default runs/METHOD/DATASET/RUNTIME/MODEL/SEED)."
}

variable "task_endpoints" {
  type        = list(string)
  default     = []
  description = "Task model base URLs, used round robin; empty: TASK_ENDPOINTS, then VLLM_BASE_URL."
}

variable "allow_any_cell" {
  type    = bool
  default = false
}

variable "reflection_model_id" {
  type    = string
  default = "Qwen/Qwen3.5-122B-A10B-FP8"
}

variable "reflection_base_url" {
  type    = string
  default = "http://localhost:8200/v1"
}

variable "grid" {
  type        = string
  default     = "testdata/optimizer/grid.json"
  description = "The experiment grid: methods with their command and cells, models."
}

variable "data_dir" {
  type    = string
  default = "testdata/optimizer/data"
}

variable "seed_bundle" {
  type    = string
  default = "testdata/optimizer/bundles/seed/"
}

variable "worker" {
  type        = string
  default     = "testdata/workers/chat_worker.py"
  description = "The evaluation worker (docs/worker-protocol.md); it reads the bundle's system.txt."
}

variable "method_args" {
  type        = list(string)
  default     = []
  description = "Extra arguments for the method's command (the simulated method's --mode, say)."
}

locals {
  grid = jsondecode(file(var.grid))
  runtime_id = join("+", compact([
    var.topology, var.framework, var.communication,
    var.team_size > 0 ? "team${var.team_size}" : "",
  ]))
  cell_id    = "${var.dataset}/${local.runtime_id}/${var.model}"
  out        = var.out != "" ? var.out : "runs/${var.method}/${var.dataset}/${local.runtime_id}/${var.model}/${var.seed}"
  task_model = local.grid.models[var.model]
  method     = local.grid.methods[var.method]
  split      = { for s in ["train", "val", "test"] : s => "${var.data_dir}/${var.dataset}/${s}.jsonl" }
  # Everything about the runtime that changes a result: it enters every item
  # key, so another cell never reuses these evaluations.
  runtime = {
    topology      = var.topology
    framework     = var.framework
    communication = var.communication
    team_size     = var.team_size
    temperature   = 0
    eval_seed     = 0
  }
  prompt = "--system-prompt-file"
}

stage "job" "job" {
  out              = local.out
  method           = var.method
  dataset          = var.dataset
  runtime          = local.runtime_id
  model            = var.model
  task_model       = local.task_model
  seed             = var.seed
  budget           = var.budget
  reflection_model = var.reflection_model_id
  in_grid          = contains(local.method.cells, local.cell_id)
  allow_any_cell   = var.allow_any_cell
  files = {
    method   = local.method.code
    data     = values(local.split)
    worker   = [var.worker]
    bundle   = [var.seed_bundle]
    pipeline = ["pipelines/optimizer_job.hcl"]
  }
}

stage "optimize" "optimize" {
  after               = [stage.job]
  on_interrupt        = "fail" # an interrupted optimization is never restarted silently
  run                 = concat(local.method.command, ["--seed", tostring(var.seed)], var.method_args)
  out                 = local.out
  budget              = var.budget
  bundle              = [var.seed_bundle]
  worker              = ["python3", var.worker, local.prompt, "{bundle}/system.txt"]
  items               = local.split.train
  model               = local.task_model
  runtime             = local.runtime
  endpoints           = var.task_endpoints
  reflection_model    = var.reflection_model_id
  reflection_base_url = var.reflection_base_url
  max_in_flight       = 8
  item_timeout        = "10m"
}

stage "evaluate" "seed_validation" {
  after         = [stage.job]
  worker        = ["python3", var.worker, local.prompt, "${var.seed_bundle}system.txt"]
  items         = local.split.val
  bundle        = [var.seed_bundle]
  model         = local.task_model
  runtime       = local.runtime
  endpoints     = var.task_endpoints
  max_in_flight = 8
  item_timeout  = "10m"
  scores        = "${local.out}/validation/seed_scores.jsonl"
}

stage "evaluate" "incumbent_validation" {
  worker        = ["python3", var.worker, local.prompt, "${trimsuffix(stage.optimize.result.candidate[0], "/")}/system.txt"]
  items         = local.split.val
  bundle        = stage.optimize.result.candidate
  model         = local.task_model
  runtime       = local.runtime
  endpoints     = var.task_endpoints
  max_in_flight = 8
  item_timeout  = "10m"
  scores        = "${local.out}/validation/incumbent_scores.jsonl"
}

stage "select" "select" {
  on_upstream_failure = "run" # a failed validation deploys the seed bundle
  out                 = local.out
  optimization        = stage.optimize.result
  seed                = stage.seed_validation
  incumbent           = stage.incumbent_validation
}

stage "evaluate" "seed_test" {
  wait_for      = [stage.select] # the test split is opened after the selection
  worker        = ["python3", var.worker, local.prompt, "${var.seed_bundle}system.txt"]
  items         = local.split.test
  bundle        = [var.seed_bundle]
  model         = local.task_model
  runtime       = local.runtime
  endpoints     = var.task_endpoints
  max_in_flight = 8
  item_timeout  = "10m"
  scores        = "${local.out}/test/seed_scores.jsonl"
}

# When the seed bundle is deployed, this evaluation has the seed_test's item
# keys: the test split is evaluated once, and every item here comes from the
# item store.
stage "evaluate" "deployed_test" {
  after         = [stage.seed_test]
  worker        = ["python3", var.worker, local.prompt, "${trimsuffix(stage.select.result.deployed_bundle[0], "/")}/system.txt"]
  items         = local.split.test
  bundle        = stage.select.result.deployed_bundle
  model         = local.task_model
  runtime       = local.runtime
  endpoints     = var.task_endpoints
  max_in_flight = 8
  item_timeout  = "10m"
  scores        = "${local.out}/test/deployed_scores.jsonl"
}

stage "job_result" "result" {
  out          = local.out
  job          = stage.job.result
  optimization = stage.optimize.result
  selection    = stage.select.result
  baseline     = stage.seed_test
  deployed     = stage.deployed_test
}
