# A misspelt type constraint.
variable "seeds" {
  type    = lst(string) # ERROR: Invalid type specification
  default = ["0", "1"]
}
