# A default that does not fit the type; the variable is not then also
# reported as missing.
variable "epochs" {
  type    = number
  default = "three" # ERROR: This default value does not fit the variable's type constraint number
}

stage "command" "train" {
  run = ["python", "train.py", "--epochs", var.epochs]
}
