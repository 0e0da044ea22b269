# A validation may only look at variables.
locals {
  max = 4
}

variable "variants" {
  type    = list(string)
  default = ["a"]
  validation {
    condition     = length(var.variants) <= local.max # ERROR: may refer only to input variables
    error_message = "Too many variants."
  }
}
