# Locals built from variables, from each other (in any order) and from
# path.
variable "tag" {
  type    = string
  default = "run7"
}

locals {
  out_dir = "${local.root_out}/${var.tag}"
  files   = { for m in local.models : m => "${local.out_dir}/${m}.json" }
  models  = sort(distinct(concat(local.base, ["mistral"])))
  base    = ["qwen", "llama", "qwen"]
  # path.pipeline is the pipeline's folder relative to the workspace.
  root_out = "${path.pipeline}/out"
}

stage "command" "eval" {
  for_each = local.files
  run      = ["python", "eval.py", "--model", each.key, "--out", each.value]
  result   = each.value
}
