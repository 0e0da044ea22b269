# Many mistakes in one file: every one is reported in one pass.
pipeline "many" {}

# Validate checks without a value for it; plan and apply require one.
variable "model" {
  type = string
}

variable "seeds" {
  type    = list(string)
  default = ["0", "1"]
}

stage "command" "prepare" {
  run    = ["python", "prepare.py"]
  inptus = ["prepare.py"] # ERROR: Did you mean "inputs"?
}

stage "comand" "train" { # ERROR: Did you mean "command"?
  for_each = toset(var.seeds)
  run      = ["python", "train.py", "--seed", each.key]
}

stage "command" "eval" {
  for_each = 2 # ERROR: got number
  run      = ["python", "eval.py"]
}

stage "command" "report" {
  run     = ["python", "report.py", local.title] # ERROR: Reference to undeclared local value
  gpus    = "all" # ERROR: gpus must be a whole number.
  timeout = "forever" # ERROR: "forever" is not a duration
}

stage "command" "sweep" {
  for_each = toset(["a", "b"])
  run      = ["python", "sweep.py", each.key]
  timeout  = "1h"
  gpus     = "one" # ERROR: Invalid gpus
}

stage "command" "summary" {
  after = [stage.sweep["c"]] # ERROR: stage.sweep has no instance "c".
  run   = "python summary.py" # ERROR: Invalid run
}
