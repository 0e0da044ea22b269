# Attributes that take a literal refuse a variable or a function call, once.
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
