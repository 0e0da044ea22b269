# One local value declared in two locals blocks.
locals {
  out = "out"
}

locals {
  out = "results" # ERROR: Duplicate local value "out"
}
