# A validation condition must be true or false.
variable "epochs" {
  type    = number
  default = 3
  validation {
    condition     = var.epochs # ERROR: The condition must be true or false.
    error_message = "epochs must be positive."
  }
}
