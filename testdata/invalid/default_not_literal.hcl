# A default that is not a literal is one error: the variable is not also
# reported as required.
variable "d" {
  default = upper("x") # ERROR: Function calls not allowed
}

stage "command" "train" {
  run = ["echo", var.d]
}
