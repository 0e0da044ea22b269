# Numbers stay within a float64's range: writing 1e10000000 out as text
# would take minutes.
locals {
  big    = "${1e10000000}" # ERROR: Number out of range
  pow    = pow(10, 400) # ERROR: Number out of range
  square = 1e300 * 1e300 # ERROR: Number out of range
  parsed = tonumber("1e999999") # ERROR: Number out of range
  fine   = [1.5, 1e300, -2, 0, 1e-300]
}

stage "command" "a" {
  run = ["echo", local.big, local.pow, local.square, local.parsed, jsonencode(local.fine)]
}
