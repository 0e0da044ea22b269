# Prompt-optimizer jobs: a method on a cell (dataset, runtime, task model)
# with one optimizer seed, from the seed bundle to result.json, for every job
# of the experiment grid (the grid file's methods, the cells each covers, and
# the seeds), or for the one job the variables name. It replaces the seed's
# `python -m optimizers.protocol.run`:
#
#   cairn apply pipelines/optimizer_grid.hcl                       # the whole grid
#   cairn apply pipelines/optimizer_grid.hcl --var method=simgepa --var dataset=sums \
#     --var topology=single --var model=sim --var seed=0           # one job
#
# Each job's phases are its own nodes, keyed by METHOD/DATASET/RUNTIME/MODEL/SEED:
# job (seals job.json) -> optimize (the method, metered against the budget) ->
# validate (seed and incumbent bundles on the validation split, uncharged) ->
# select -> test (seed and deployed bundles on the test split, uncharged) ->
# result (test.json, result.json and the summary line). A job's out folder
# holds job.json, optimization.json, optimization/, selection.json, test.json
# and result.json (docs/job-artifacts.md). All jobs share the cache's item
# store, so the seed bundle's evaluations of a cell and seed are made once for
# every method. With the simulated task model and method (testdata/optimizer/):
# `make demo-optimizer`.
#
# One file for the grid and the one job: pipelines have no modules, and two
# copies of a job's stages would drift apart.

pipeline "optimizer-grid" {
  description = "Optimizer jobs: optimize -> validate -> select -> test, each sealed in its out folder"
}

variable "method" {
  type        = string
  default     = ""
  description = "One job's method (a key of the grid's methods); empty: every job of the grid."
}

variable "dataset" {
  type        = string
  default     = ""
  description = "One job's dataset; its splits are DATA_DIR/DATASET/{train,val,test}.jsonl."
}

variable "topology" {
  type        = string
  default     = ""
  description = "One job's base topology, or a registry key naming the whole runtime."
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
  default     = ""
  description = "One job's task model, by its short name (a key of the grid's models)."
}

variable "seed" {
  type    = number
  default = 0
  validation {
    condition     = var.seed >= 0 && floor(var.seed) == var.seed
    error_message = "The optimizer seed is a whole number, 0 or more."
  }
}

variable "methods" {
  type        = list(string)
  default     = []
  description = "The grid's methods to run (default: all)."
}

variable "datasets" {
  type        = list(string)
  default     = []
  description = "The grid's datasets to run (default: all)."
}

variable "seeds" {
  type        = list(number)
  default     = [0, 1, 2]
  description = "The grid's optimizer seeds."
}

variable "budget" {
  type        = number
  default     = 600
  description = "Rollouts each method may charge; below 600 a job is a non-conformant smoke run."
}

variable "out" {
  type        = string
  default     = ""
  description = "One job's out folder (default RUNS/METHOD/DATASET/RUNTIME/MODEL/SEED)."
}

variable "runs" {
  type        = string
  default     = "runs"
  description = "The folder the jobs' out folders go under."
}

variable "job_concurrency" {
  type        = number
  default     = 4
  description = "Methods running at once (each job's rollouts are served one request at a time)."
}

variable "task_endpoints" {
  type        = list(string)
  default     = []
  description = "Task model base URLs for every job, used round robin; empty: the grid file's endpoints of the job's model, else TASK_ENDPOINTS, then VLLM_BASE_URL."
}

variable "serve" {
  type        = bool
  default     = false
  description = "true: cairn starts the model servers as serve stages (docs/serve.md): each task model's replicas across the free GPUs from its port (8000), the reflection model on 4 GPUs at port 8200, from the grid file's servers, and stops them when no job needs them; false: the jobs use servers you run (task_endpoints, the grid file's endpoints, TASK_ENDPOINTS, VLLM_BASE_URL; reflection_base_url)."
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
  type        = string
  default     = ""
  description = "The reflection model's base URL handed to the method; empty: REFLECTION_MODEL_BASE_URL, else http://localhost:8200/v1."
}

variable "grid" {
  type        = string
  default     = "testdata/optimizer/grid.json"
  description = "The experiment grid: methods with their command, code and cells; models."
  # What the pipeline reads of the grid file, checked here so that a
  # mistake in it is named by the file and the field (pipelines/grids/README.md).
  validation {
    condition     = can(keys(jsondecode(file(var.grid)).methods)) && length(try(keys(jsondecode(file(var.grid)).models), [])) > 0
    error_message = "${var.grid} must hold a \"methods\" object (each method's command, code and cells) and a \"models\" object, not empty (each model name's task model id); it has ${length(try(keys(jsondecode(file(var.grid))), [])) == 0 ? "neither" : "only ${join(", ", try(keys(jsondecode(file(var.grid))), []))}"} (pipelines/grids/README.md)."
  }
  validation {
    condition     = length(flatten([for g in [try(jsondecode(file(var.grid)), {})] : [for m, spec in try(g.methods, {}) : m if !(can([for a in spec.command : tostring(a)]) && length(try(spec.command, [])) > 0)]])) == 0
    error_message = "${var.grid}: ${join(", ", [for m, spec in try(jsondecode(file(var.grid)).methods, {}) : "methods.${m}.command" if !can([for a in spec.command : tostring(a)]) || length(try(spec.command, [])) == 0])} must be a list of strings, the method's command line (like [\"python\", \"-m\", \"optimizers.gepa\"])."
  }
  validation {
    condition     = length(flatten([for g in [try(jsondecode(file(var.grid)), {})] : length(try(keys(g.models), [])) == 0 ? [] : flatten([for m, spec in try(g.methods, {}) : can(tolist(spec.cells)) ? [for i, c in spec.cells : i if !(can(regex("^[^/]+/[^/]+/[^/]+$", c)) && contains(keys(g.models), try(split("/", c)[2], "")))] : [m]])])) == 0
    error_message = "${var.grid}: ${join("; ", slice(flatten([for m, spec in try(jsondecode(file(var.grid)).methods, {}) : can(tolist(spec.cells)) ? [for i, c in spec.cells : "methods.${m}.cells[${i}] is ${jsonencode(c)}, ${can(regex("^[^/]+/[^/]+/[^/]+$", c)) ? "whose model ${jsonencode(split("/", c)[2])} is not in models" : "not DATASET/RUNTIME/MODEL"}" if !can(regex("^[^/]+/[^/]+/[^/]+$", c)) || !contains(try(keys(jsondecode(file(var.grid)).models), []), try(split("/", c)[2], ""))] : ["methods.${m}.cells is not a list of cells"]]), 0, min(5, length(flatten([for m, spec in try(jsondecode(file(var.grid)).methods, {}) : can(tolist(spec.cells)) ? [for i, c in spec.cells : "methods.${m}.cells[${i}] is ${jsonencode(c)}, ${can(regex("^[^/]+/[^/]+/[^/]+$", c)) ? "whose model ${jsonencode(split("/", c)[2])} is not in models" : "not DATASET/RUNTIME/MODEL"}" if !can(regex("^[^/]+/[^/]+/[^/]+$", c)) || !contains(try(keys(jsondecode(file(var.grid)).models), []), try(split("/", c)[2], ""))] : ["methods.${m}.cells is not a list of cells"]])))))}${length(flatten([for m, spec in try(jsondecode(file(var.grid)).methods, {}) : can(tolist(spec.cells)) ? [for i, c in spec.cells : "methods.${m}.cells[${i}] is ${jsonencode(c)}, ${can(regex("^[^/]+/[^/]+/[^/]+$", c)) ? "whose model ${jsonencode(split("/", c)[2])} is not in models" : "not DATASET/RUNTIME/MODEL"}" if !can(regex("^[^/]+/[^/]+/[^/]+$", c)) || !contains(try(keys(jsondecode(file(var.grid)).models), []), try(split("/", c)[2], ""))] : ["methods.${m}.cells is not a list of cells"]])) > 5 ? "; and ${length(flatten([for m, spec in try(jsondecode(file(var.grid)).methods, {}) : can(tolist(spec.cells)) ? [for i, c in spec.cells : "methods.${m}.cells[${i}] is ${jsonencode(c)}, ${can(regex("^[^/]+/[^/]+/[^/]+$", c)) ? "whose model ${jsonencode(split("/", c)[2])} is not in models" : "not DATASET/RUNTIME/MODEL"}" if !can(regex("^[^/]+/[^/]+/[^/]+$", c)) || !contains(try(keys(jsondecode(file(var.grid)).models), []), try(split("/", c)[2], ""))] : ["methods.${m}.cells is not a list of cells"]])) - 5} more" : ""}: a cell is DATASET/RUNTIME/MODEL, its model one of models (${join(", ", try(keys(jsondecode(file(var.grid)).models), []))})."
  }
}

variable "data_dir" {
  type    = string
  default = "testdata/optimizer/data"
}

variable "seed_bundle" {
  type        = string
  default     = "testdata/optimizer/bundles/seed/"
  description = "The seed bundle's folder (with or without a trailing slash); the worker reads its system.txt."
}

variable "worker" {
  type        = string
  default     = "testdata/workers/chat_worker.py"
  description = "The evaluation worker (docs/worker-protocol.md); it reads the bundle's system.txt."
}

variable "method_args" {
  type        = list(string)
  default     = []
  description = "Extra arguments for every method's command (the simulated method's --mode, say)."
}

locals {
  grid = jsondecode(file(var.grid))
  one_runtime = join("+", compact([
    var.topology, var.framework, var.communication,
    var.team_size > 0 ? "team${var.team_size}" : "",
  ]))
  one = [{ method = var.method, dataset = var.dataset, runtime = local.one_runtime, model = var.model, seed = var.seed }]
  all = flatten([
    for m, spec in local.grid.methods : [
      for c in spec.cells : [
        for s in var.seeds : { method = m, dataset = split("/", c)[0], runtime = split("/", c)[1], model = split("/", c)[2], seed = s }
        if length(var.datasets) == 0 || contains(var.datasets, split("/", c)[0])
      ]
    ] if length(var.methods) == 0 || contains(var.methods, m)
  ])
  job_specs = {
    for j in(var.method != "" ? local.one : local.all) : "${j.method}/${j.dataset}/${j.runtime}/${j.model}/${j.seed}" => merge(j, {
      cell_id = "${j.dataset}/${j.runtime}/${j.model}"
      out     = var.method != "" && var.out != "" ? var.out : "${var.runs}/${j.method}/${j.dataset}/${j.runtime}/${j.model}/${j.seed}"
      split   = { for s in ["train", "val", "test"] : s => "${var.data_dir}/${j.dataset}/${s}.jsonl" }
      # Everything about the runtime that changes a result: it enters every
      # item key, so another cell never reuses these evaluations; the evaluation
      # seed is the job's seed, so jobs of one cell and seed share them. The
      # runtime's env (its install: PYTHONPATH to an SDK, say) is in it when
      # the grid file gives one.
      runtime_settings = merge({ runtime = j.runtime, temperature = 0, eval_seed = j.seed }, try(local.runtime_env[j.runtime], {}))
      # A runtime may need its own install (the grid file's runtimes: env
      # for every process of the job, and a check that it is usable).
      env   = try(local.grid.runtimes[j.runtime].env, {})
      check = try(local.grid.runtimes[j.runtime].check, null)
      # The method's command line: sealed in job.json, run by optimize.
      run = concat(local.grid.methods[j.method].command, ["--seed", tostring(j.seed)], var.method_args)
    })
  }
  # The runtimes whose env the grid file gives: { env = ... } for the
  # runtime settings of their evaluations.
  runtime_env = { for r, spec in try(local.grid.runtimes, {}) : r => { env = spec.env } if length(try(spec.env, {})) > 0 }
  # A phase is done when its artifact is in the out folder: a rerun
  # evaluates nothing for a job whose selection (validation) or result
  # (test) is written, whatever the cache holds.
  jobs = {
    for k, j in local.job_specs : k => merge(j, {
      selected = fileexists("${j.out}/selection.json")
      finished = fileexists("${j.out}/result.json")
    })
  }
  prompt = "--system-prompt-file"
  # The seed bundle's folder, written with one trailing slash however the
  # variable has it: "${local.seed_bundle}system.txt" is then its file.
  seed_bundle = "${trimsuffix(var.seed_bundle, "/")}/"
  # One worker serves every rollout of an optimization: it reads each
  # request's bundle (bundle_in_request), so no rollout waits for a start.
  rollout_worker = ["python3", var.worker, "--bundle-system-prompt", "system.txt"]
  # The model servers' command lines (the grid file's servers, else vLLM):
  # what the serve stages run, and what each job's job.json seals.
  reflection_server_run = try(local.grid.reflection_server.run, ["vllm", "serve", var.reflection_model_id, "--port", "{port}", "--tensor-parallel-size", "{gpus}"])
  task_server_run       = { for m in distinct([for j in values(local.job_specs) : j.model]) : m => try(local.grid.servers[m].run, ["vllm", "serve", local.grid.models[m], "--port", "{port}", "--tensor-parallel-size", "{gpus}"]) }
  # What each job's job.json seals of them, by model: null for servers
  # you run (serve = false).
  job_servers = { for m, run in local.task_server_run : m => var.serve ? { task = run, reflection = local.reflection_server_run } : null }
  # And the weights they serve (the serve stages' weights), by model: new
  # weights under the same model id and command line are another job's.
  job_server_weights = { for m in keys(local.task_server_run) : m => var.serve ? { task = try(local.grid.servers[m].weights, null), reflection = try(local.grid.reflection_server.weights, null) } : null }
}

# The model servers. With serve = true cairn starts them (the grid file's
# servers: the command line of each task model and of the reflection model)
# when a job will send them a request, and stops them when none will; a
# job's evaluations are then keyed by the weights served and the servers'
# command lines (docs/serve.md).
# With serve = false they publish the endpoints of servers you run, and the
# keys are the model id's, as without serve stages.
stage "serve" "reflection_model" {
  run           = local.reflection_server_run
  model         = var.reflection_model_id
  weights       = try(local.grid.reflection_server.weights, null)
  gpus          = var.serve ? try(local.grid.reflection_server.gpus, 4) : 0
  replicas      = 1
  port          = try(local.grid.reflection_server.port, 8200)
  start_timeout = "30m"
  endpoints     = var.serve ? null : compact([var.reflection_base_url])
}

stage "serve" "task_model" {
  for_each = toset([for j in values(local.job_specs) : j.model])
  # After the reflection model: the task model's replicas take the GPUs it
  # leaves free, one replica per GPU by default.
  after         = [stage.reflection_model]
  run           = local.task_server_run[each.key]
  model         = local.grid.models[each.key]
  weights       = try(local.grid.servers[each.key].weights, null)
  gpus          = var.serve ? try(local.grid.servers[each.key].gpus, 1) : 0
  port          = try(local.grid.servers[each.key].port, 8000)
  start_timeout = "30m"
  # Servers you run: --var task_endpoints for every model, else the grid
  # file's endpoints of the model (each model is served by its own
  # replicas), else TASK_ENDPOINTS, then VLLM_BASE_URL.
  endpoints = var.serve ? null : (length(var.task_endpoints) > 0 ? var.task_endpoints : tolist(try(local.grid.endpoints[each.key], [])))
}

stage "job" "job" {
  for_each         = local.jobs
  out              = each.value.out
  method           = each.value.method
  dataset          = each.value.dataset
  runtime          = each.value.runtime
  model            = each.value.model
  task_model       = local.grid.models[each.value.model]
  seed             = each.value.seed
  budget           = var.budget
  reflection_model = var.reflection_model_id
  check            = each.value.check
  env              = each.value.env
  in_grid          = contains(local.grid.methods[each.value.method].cells, each.value.cell_id)
  allow_any_cell   = var.allow_any_cell
  command          = each.value.run
  worker           = local.rollout_worker
  splits           = each.value.split
  # The servers cairn starts for the job, sealed with it: a server run
  # with other flags, or serving other weights, is another job's
  # (docs/job-artifacts.md).
  servers        = local.job_servers[each.value.model]
  server_weights = local.job_server_weights[each.value.model]
  files = {
    method = local.grid.methods[each.value.method].code
    data   = values(each.value.split)
    worker = [var.worker]
    bundle = [local.seed_bundle]
    # This file, where it is: the pipeline may be applied from the user's
    # own project folder (cairn apply PATH/TO/optimizer_grid.hcl).
    pipeline = ["${path.pipeline}/optimizer_grid.hcl"]
  }
}

stage "optimize" "optimize" {
  for_each = local.jobs
  after    = [stage.job[each.key]]
  # An interrupted (or crashed) optimization is never restarted silently:
  # the optimize kind refuses it from the out folder's started marker,
  # whatever the cache, and --replace starts it over (docs/job-artifacts.md).
  concurrency         = var.job_concurrency
  run                 = each.value.run
  out                 = each.value.out
  budget              = var.budget
  bundle              = [local.seed_bundle]
  worker              = local.rollout_worker
  bundle_in_request   = true
  items               = each.value.split.train
  model               = local.grid.models[each.value.model]
  runtime             = each.value.runtime_settings
  endpoints           = stage.task_model[each.value.model].endpoints
  reflection_model    = var.reflection_model_id
  reflection_base_url = var.serve ? stage.reflection_model.endpoints : [var.reflection_base_url]
  max_in_flight       = 8
  item_timeout        = "10m"
  retry_infra         = var.rollout_retry_infra
  env                 = each.value.env
}

stage "evaluate" "seed_validation" {
  for_each      = local.jobs
  after         = [stage.job[each.key]]
  worker        = ["python3", var.worker, local.prompt, "${local.seed_bundle}system.txt"]
  items         = each.value.split.val
  bundle        = [local.seed_bundle]
  model         = local.grid.models[each.value.model]
  runtime       = each.value.runtime_settings
  endpoints     = stage.task_model[each.value.model].endpoints
  max_in_flight = 8
  item_timeout  = "10m"
  env           = each.value.env
  scores        = "${each.value.out}/validation/seed_scores.jsonl"
  needed        = !each.value.selected
}

stage "evaluate" "incumbent_validation" {
  for_each      = local.jobs
  worker        = ["python3", var.worker, local.prompt, "${trimsuffix(stage.optimize[each.key].result.candidate[0], "/")}/system.txt"]
  items         = each.value.split.val
  bundle        = stage.optimize[each.key].result.candidate
  model         = local.grid.models[each.value.model]
  runtime       = each.value.runtime_settings
  endpoints     = stage.task_model[each.value.model].endpoints
  max_in_flight = 8
  item_timeout  = "10m"
  env           = each.value.env
  scores        = "${each.value.out}/validation/incumbent_scores.jsonl"
  needed        = !each.value.selected
}

# A failed validation (an endpoint down past its retries) stops the job
# before its selection: the next apply resumes the validation. Once
# selection.json is written it is the job's, and a rerun keeps it.
stage "select" "select" {
  for_each     = local.jobs
  out          = each.value.out
  optimization = stage.optimize[each.key].result
  seed         = stage.seed_validation[each.key]
  incumbent    = stage.incumbent_validation[each.key]
}

stage "evaluate" "seed_test" {
  for_each      = local.jobs
  wait_for      = [stage.select[each.key]] # the test split is opened after the selection
  worker        = ["python3", var.worker, local.prompt, "${local.seed_bundle}system.txt"]
  items         = each.value.split.test
  bundle        = [local.seed_bundle]
  model         = local.grid.models[each.value.model]
  runtime       = each.value.runtime_settings
  endpoints     = stage.task_model[each.value.model].endpoints
  max_in_flight = 8
  item_timeout  = "10m"
  env           = each.value.env
  scores        = "${each.value.out}/test/seed_scores.jsonl"
  needed        = !each.value.finished
}

# When the seed bundle is deployed, this evaluation has the seed_test's item
# keys: the test split is evaluated once, and every item here comes from the
# item store.
stage "evaluate" "deployed_test" {
  for_each      = local.jobs
  after         = [stage.seed_test[each.key]]
  worker        = ["python3", var.worker, local.prompt, "${trimsuffix(stage.select[each.key].result.deployed_bundle[0], "/")}/system.txt"]
  items         = each.value.split.test
  bundle        = stage.select[each.key].result.deployed_bundle
  model         = local.grid.models[each.value.model]
  runtime       = each.value.runtime_settings
  endpoints     = stage.task_model[each.value.model].endpoints
  max_in_flight = 8
  item_timeout  = "10m"
  env           = each.value.env
  scores        = "${each.value.out}/test/deployed_scores.jsonl"
  needed        = !each.value.finished
}

stage "job_result" "result" {
  for_each     = local.jobs
  out          = each.value.out
  job          = stage.job[each.key].result
  optimization = stage.optimize[each.key].result
  selection    = stage.select[each.key].result
  baseline     = stage.seed_test[each.key]
  deployed     = stage.deployed_test[each.key]
}

variable "rollout_retry_infra" {
  type        = number
  default     = 3
  description = "Retries of a rollout after an infrastructure failure; one that spends them is counted, not charged."
}

variable "reports" {
  type        = string
  default     = "reports/optimizer"
  description = "Where the grid's aggregate table goes (aggregate.tsv, summary.json, forest.svg)."
}

variable "include_nonconformant" {
  type        = bool
  default     = false
  description = "Aggregate smoke-budget and off-grid jobs too."
}

# The grid's table over seeds 0, 1, 2 (docs/aggregate.md): it reads every
# job's result.json and test.json under the runs folder, so it waits for the
# result nodes that write them. A job that failed leaves its row incomplete.
stage "aggregate" "summary" {
  for_each              = var.method == "" ? toset(["grid"]) : toset([])
  on_upstream_failure   = "run"
  after                 = [stage.result]
  roots                 = [var.runs]
  include_nonconformant = var.include_nonconformant
  out_dir               = var.reports
}
