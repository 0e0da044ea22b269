variable "tasks" {
  type    = list(string)
  default = ["gsm8k", "math"]
}

locals {
  out = "out/${path.pipeline}"
}
