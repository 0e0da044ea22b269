pipeline "memory-decision" {
  description = "Seed 003: the frozen GPU-memory decision protocol: its sealed inputs, its 48 planned processes under the protocol's resource cap and failure policy, and the replay of its decision rules."
}

# The frozen protocol, read as it is: seed 003's decision_protocol.json
# (--var protocol=decision_protocol.json).
variable "protocol" {
  type = string
}

# The protocol's sha256 as recorded when it was frozen (sha256sum
# decision_protocol.json): when given, a protocol with another digest is
# refused by the seal (an edited copy changes the figures). Without it the
# protocol is pinned to itself: its digest keys every node.
variable "protocol_sha256" {
  type    = string
  default = null
}

# The matrix file whose digest the protocol froze as matrix_sha256: when
# given, it is sealed to that digest (the protocol does not name the file).
variable "matrix" {
  type    = string
  default = null
}

# The instrumented training job; each slot's settings follow as flags:
# --model-family F --dataset D --actor-micro-batch N --reservation R --seed S --slot ID.
variable "train_command" {
  type    = list(string)
  default = ["bash", "run_grpo_instrumented.slurm"]
}

# The attempt ledger (attempts.log, attempts.tsv, attempts.json) and the
# replay's files.
variable "ledger" {
  type    = string
  default = "decision/ledger"
}

variable "reports" {
  type    = string
  default = "reports/decision"
}

locals {
  protocol = jsondecode(file(var.protocol))
  cap      = local.protocol.resource_cap
  # Every planned process, in the protocol's collection order.
  planned = decisionslots(var.protocol)
  slots   = { for s in local.planned : s.slot_id => s }
}

# The files the protocol froze: the run is refused unless the working tree
# matches them. The protocol cannot hold its own digest: it is pinned to
# var.protocol_sha256 when given, else to itself (it enters every node key,
# so a changed protocol reruns everything); the matrix file, when given, to
# matrix_sha256.
seal "protocol" {
  description = "source_files_sha256, data_files_sha256, implementation_sha256 and matrix_sha256 of the protocol, and the protocol's own digest"
  sha256 = merge(
    local.protocol.source_files_sha256,
    local.protocol.data_files_sha256,
    local.protocol.implementation_sha256,
    { (var.protocol) = var.protocol_sha256 != null ? var.protocol_sha256 : filesha256(var.protocol) },
    var.matrix != null ? { (var.matrix) = local.protocol.matrix_sha256 } : {},
  )
}

# The 48 processes: per case and candidate one screen slot and three
# evaluation slots. A list for_each keeps the collection order, and ready
# nodes start in that order. One allocation is a lease of
# gpus_per_allocation GPUs; concurrent_allocations of them at once.
stage "slot" "collect" {
  for_each = [for s in local.planned : s.slot_id]
  slot     = each.key
  run = concat(var.train_command, [
    "--model-family", local.slots[each.key].model_family,
    "--dataset", local.slots[each.key].dataset,
    "--actor-micro-batch", local.slots[each.key].actor_micro_batch,
    "--reservation", local.slots[each.key].reservation,
    "--seed", local.slots[each.key].seed,
    "--slot", each.key,
  ])
  gpus             = local.cap.gpus_per_allocation
  concurrency      = local.cap.concurrent_allocations
  timeout          = local.cap.process_timeout_seconds
  allocation_time  = local.cap.wall_minutes_per_allocation * 60
  memory_limit_mib = local.protocol.memory_limit_mib
  ledger           = var.ledger

  # The failure policy: no retry of a memory failure or an unresolved
  # failure; one unchanged replacement per slot, at most
  # max_repair_allocations in all, for the documented setup classes only.
  max_replacements = local.cap.max_repair_allocations
  replace_on = {
    missing_dependency = ["ModuleNotFoundError: ", "ImportError: "]
    missing_data       = ["FileNotFoundError: .*\\.(parquet|csv|json|jsonl)"]
    gpu_visibility     = ["invalid device ordinal", "no CUDA-capable device is detected", "CUDA_VISIBLE_DEVICES does not match"]
    port_collision     = ["Address already in use", "EADDRINUSE"]
    corrupted_artifact = ["PytorchStreamReader failed", "corrupted checkpoint artifact"]
  }
}

# The replay of source_copy, headroom_guard and direct_screen over the
# budgets, from the slots' outcomes (a slot that never started is
# not_started).
stage "decision" "replay" {
  on_upstream_failure = "run"
  protocol            = var.protocol
  slots               = stage.collect
  out_dir             = var.reports
  matrix              = var.matrix
}
