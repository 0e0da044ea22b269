# The 4-variant AIME24 batch (seed 000) as a cairn pipeline:
#
#   preflight (every config, all reported)
#     -> RULER accuracy gate (one variant at a time on one free GPU, >= 0.85)
#       -> AIME24 batch (exactly 4 variants, waves of min(free GPUs, 4),
#          each pinned to a free GPU, 60-minute timeout per variant)
#         -> comparison table and Pareto front on (throughput, mean@16)
#
# Real run, from the repository that holds submissions/, algorithm_scientist/
# and vortex_torch/:
#
#   cairn apply pipelines/aime24_batch.hcl --var tag=my_tag \
#     --var 'variants=["batch_x_id0","batch_x_id1","batch_x_id2","batch_x_id3"]'
#
# Simulated run (no GPU, no Python): add --var-file pipelines/sim.tfvars
# and CAIRN_GPUS=sim:4; see pipelines/README.md and `make demo`.

pipeline "aime24-batch" {
  description = "Seed 000: preflight -> RULER gate -> 4-variant AIME24 batch on the free GPUs -> comparison table and Pareto front"
}

variable "tag" {
  type        = string
  description = "Your agent tag (sanitized model name, set once per session): configs are submissions/<tag>/<name>.json."
  validation {
    condition     = can(regex("^[A-Za-z0-9][A-Za-z0-9._-]*$", var.tag))
    error_message = "tag must be a sanitized name (letters, digits, '.', '_', '-'), got \"${var.tag}\"."
  }
}

variable "variants" {
  type        = list(string)
  description = "The 4 submission names of the batch, e.g. [\"batch_x_id0\", \"batch_x_id1\", \"batch_x_id2\", \"batch_x_id3\"]: the launch order in waves mode (variant y of a wave on the wave's y-th free GPU); backfill starts the one known to take longest first."
  validation {
    condition     = length(var.variants) == 4
    error_message = "Batches must contain exactly 4 variants. Got ${length(var.variants)} — re-design and re-invoke."
  }
  validation {
    condition     = length(distinct(var.variants)) == length(var.variants)
    error_message = "Batches must contain 4 different variants: ${join(", ", [for v in distinct([for i, v in var.variants : v if index(var.variants, v) != i]) : "\"${v}\""])} given more than once — re-design and re-invoke."
  }
  validation {
    condition     = length([for v in var.variants : v if !can(regex("^[A-Za-z0-9][A-Za-z0-9._-]*$", v))]) == 0
    error_message = "Variant names are submission names (submissions/<tag>/<name>.json), not paths: letters, digits, '.', '_', '-'."
  }
}

# Paths, relative to the workspace root. The runners mirror
# submissions/<tag>/<name>.json into <results dir>/<tag>/<name>/.
variable "submissions_dir" {
  type    = string
  default = "submissions"
}
variable "ruler_results_dir" {
  type    = string
  default = "summary_ruler_submissions"
}
variable "aime24_results_dir" {
  type    = string
  default = "summary_submissions"
}
variable "log_dir" {
  type        = string
  default     = "logs/submission"
  description = "Batch logs go to <log_dir>/<tag>_<UTC YYYYmmdd_HHMMSS>/gpu<idx>_<name>.out and .err."
}
variable "report_dir" {
  type        = string
  default     = "reports"
  description = "The comparison table (md, tsv, json) and pareto.svg go to <report_dir>/<tag>/."
}
variable "ledger" {
  type        = string
  default     = "algorithm_scientist/memory.md"
  description = "The protocol's markdown memory file: a RUNNING row under '1. In-flight batches' at launch, its state at the end, failures at the end of '4. Errors'. Created with those two sections when missing; \"\" keeps no ledger."
}

# The commands. "{config}" stands for submissions/<tag>/<name>.json. A
# var-file switches them (pipelines/sim.tfvars: the simulated tools).
variable "preflight_command" {
  type    = list(string)
  default = ["python", "-c", "from vortex_torch.engine.sgl import check_engine_config; check_engine_config('{config}')"]
}
variable "ruler_command" {
  type    = list(string)
  default = ["python", "algorithm_scientist/run_ruler.py", "--config", "{config}"]
}
variable "aime24_command" {
  type    = list(string)
  default = ["python", "algorithm_scientist/run_submission_aime24.py", "--config", "{config}"]
}

# What each stage's result depends on besides its config: a change to one
# of these reruns exactly the stages that declare it ("" leaves it out).
variable "engine_source" {
  type        = string
  default     = "vortex_torch/"
  description = "The attention engine package (the indexer): preflight, RULER and AIME24 all run it."
}
variable "validation_data" {
  type    = string
  default = "examples/validation.jsonl"
}
variable "preflight_runner" {
  type        = string
  default     = ""
  description = "The preflight program, when it is not part of engine_source."
}
variable "ruler_runner" {
  type    = string
  default = "algorithm_scientist/run_ruler.py"
}
variable "aime24_runner" {
  type    = string
  default = "algorithm_scientist/run_submission_aime24.py"
}

variable "ruler_min_accuracy" {
  type    = number
  default = 0.85
}
variable "aime24_timeout" {
  type        = string
  default     = "60m"
  description = "A variant still running after this long is killed and counted as failed; the others finish."
}
variable "batch_mode" {
  type        = string
  default     = "waves"
  description = "waves: the seed's waves of min(free GPUs, 4) in the order of variants, each wave waiting for the previous one; backfill: a variant starts as soon as any of the batch's GPUs frees, the longest known first."
}

variable "strict_batch" {
  type        = bool
  default     = false
  description = "false: only the variants that need it rerun (after kill -9, or when one config changed), and the table flags rows of such a partial batch; true: whenever any variant must run, all 4 run again, so the table's rows are always measured together."
}

locals {
  configs = { for v in distinct(var.variants) : v => "${var.submissions_dir}/${var.tag}/${v}.json" }
}

# Step 2: every config is checked (no GPU); every failure is reported, naming
# <tag>/<name>, and no GPU work starts while any fails. The sh wrapper only
# adds the seed's "[preflight] FAILED: <tag>/<name>" line; the command's own
# arguments pass through untouched.
stage "command" "preflight" {
  for_each = var.variants
  run = concat(
    ["/bin/sh", "-c", "\"$@\" || { status=$?; echo \"[preflight] FAILED: $0\" >&2; exit $status; }", "${var.tag}/${each.key}"],
    [for a in var.preflight_command : replace(a, "{config}", local.configs[each.key])],
  )
  inputs = compact([local.configs[each.key], var.preflight_runner, var.engine_source])
}

# Step 3: the RULER gate, one variant at a time on one free GPU, after all
# four preflights passed. Below the threshold the variant fails, and with it
# the whole AIME24 batch (which waits for all four gates). wait_for orders
# without keying: a config's preflight rerun leaves the other RULER runs cached.
stage "command" "ruler" {
  for_each    = var.variants
  wait_for    = [stage.preflight]
  run         = [for a in var.ruler_command : replace(a, "{config}", local.configs[each.key])]
  gpus        = 1
  concurrency = 1
  inputs      = compact([local.configs[each.key], var.ruler_runner, var.engine_source, var.validation_data])
  result      = "${var.ruler_results_dir}/${var.tag}/${each.key}/latest.json"

  postcondition {
    condition     = self.result.accuracy >= var.ruler_min_accuracy
    error_message = "RULER accuracy ${self.result.accuracy} < ${var.ruler_min_accuracy} for ${var.tag}/${each.key}: its attention is structurally broken. Fix it (widen vortex_topk_val / vortex_topk_ratio in ${local.configs[each.key]}, or revise the indexer), then apply again: preflight and RULER rerun for what changed, and AIME24 starts only when all 4 variants pass."
  }
}

# Step 4: the batch. Exactly 4 variants, waves of min(free GPUs, 4), each
# pinned to a free GPU index; one batch at a time on this machine. Each
# child writes <results>/<tag>/<name>/<timestamp>__<hash>.json and
# latest.json, which cairn reads as the variant's result.
stage "waves" "aime24" {
  for_each   = var.variants
  wait_for   = [stage.ruler]           # the batch starts when all 4 gates passed,
  after      = [stage.ruler[each.key]] # but each variant is keyed on its own gate only
  run        = [for a in var.aime24_command : replace(a, "{config}", local.configs[each.key])]
  batch_size = 4
  mode       = var.batch_mode
  gpus       = 1
  timeout    = var.aime24_timeout
  log_dir    = "${var.log_dir}/${var.tag}"
  tag        = var.tag
  ledger     = var.ledger
  inputs     = compact([local.configs[each.key], var.aime24_runner, var.engine_source])
  result     = "${var.aime24_results_dir}/${var.tag}/${each.key}/latest.json"

  # Whenever one variant must run, rerun all 4 (default: only those that need it).
  strict_batch = var.strict_batch
}

# Step 7: the comparison table (name | content_hash | mean@16 | pass@16 |
# throughput | e2e_time) and the Pareto-non-dominated variants on
# (throughput, mean@16). Failed variants are listed as failed.
stage "pareto" "batch" {
  on_upstream_failure = "run"
  rows                = stage.aime24
  x                   = "throughput"
  y                   = "mean@16"
  out_dir             = "${var.report_dir}/${var.tag}"
  title               = "AIME24 batch ${var.tag}: mean@16 vs throughput"
}
