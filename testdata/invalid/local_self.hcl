# A local value defined in terms of itself.
locals {
  seeds = concat(local.seeds, ["3"]) # ERROR: local.seeds cannot be defined in terms of itself.
}
