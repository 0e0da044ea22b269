# Two variables with one name.
variable "epochs" {
  default = 3
}

variable "epochs" { # ERROR: Duplicate variable "epochs"
  default = 5
}
