# A null for_each.
variable "models" {
  type    = list(string)
  default = null
}

stage "command" "eval" {
  for_each = var.models # ERROR: for_each must not be null.
  run      = ["python", "eval.py", each.key]
}
