# range() with a huge count is refused, not enumerated.
locals {
  seeds = range(100000000) # ERROR: more than 1024 values were generated
}

# A step of 0 never reaches its end: named as such.
locals {
  stuck = range(0, 1, 0) # ERROR: step must not be 0
}
