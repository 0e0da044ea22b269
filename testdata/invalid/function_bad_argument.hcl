# An argument of the wrong type.
locals {
  total = sum(["1", "two"]) # ERROR: Invalid function argument
}
