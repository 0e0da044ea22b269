# A condition of literals only that is not true or false can never be
# checked: it is refused before anything runs.
variable "v" {
  default = 1
  validation {
    condition     = "yes" # ERROR: this one is always the string "yes"
    error_message = "v must be set"
  }
}

stage "command" "a" {
  run = ["true"]
  postcondition {
    condition     = 1 # ERROR: this one is always the number 1
    error_message = "no"
  }
  postcondition {
    condition     = null # ERROR: this one is always null
    error_message = "no"
  }
  postcondition {
    condition     = true
    error_message = "a constant true is allowed"
  }
}
