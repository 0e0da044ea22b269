# A list for_each keeps its order, so a repeated key is an error.
variable "seeds" {
  type    = list(string)
  default = ["0", "1", "0"]
}

stage "command" "train" {
  for_each = var.seeds # ERROR: The for_each list holds "0" more than once
  run      = ["python", "train.py", "--seed", each.key]
}
