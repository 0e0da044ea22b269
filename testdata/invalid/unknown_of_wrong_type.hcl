# A value known only at plan (a variable without a default, at validate)
# is still checked by its type.
variable "l" {
  type = list(string)
}

stage "command" "a" {
  run = ["echo", var.l] # ERROR: run must be a list of strings: element 1 is list of string, not a string.
}

stage "command" "b" {
  run     = ["echo"]
  timeout = var.l # ERROR: timeout must be a duration string like "60m", not list of string.
}
