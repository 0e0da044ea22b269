# range() with a huge count is refused, not enumerated.
locals {
  seeds = range(100000000) # ERROR: more than 1024 values were generated
}
