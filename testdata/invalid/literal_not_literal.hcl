# Attributes that take a literal refuse a variable or a function call, once;
# and a value HCL would convert, or one computed from literals.
variable "s" {
  type    = string
  default = "x"
}

variable "n" {
  type    = number
  default = 1
}

stage "command" "train" {
  description  = var.s # ERROR: Variables not allowed
  on_interrupt = upper("fail") # ERROR: Function calls not allowed
  run          = ["python", "train.py"]
  retry {
    max = var.n # ERROR: Variables not allowed
  }
}

stage "command" "eval" {
  description         = 5 # ERROR: description must be a quoted string ("..."), not 5.
  on_interrupt        = "re${"run"}" # ERROR: on_interrupt must be one of "rerun", "fail", written as it is
  on_upstream_failure = "run"
  run                 = ["python", "eval.py"]
  retry {
    max = "2" # ERROR: max must be a whole number, 0 or more (the extra attempts after the first), not "2".
  }
}
