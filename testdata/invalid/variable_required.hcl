# A variable without a default needs a value from the command line.
variable "tag" { # ERROR: No value for required variable "tag"
  type = string
}

stage "command" "train" {
  run = ["python", "train.py", "--tag", var.tag]
}
