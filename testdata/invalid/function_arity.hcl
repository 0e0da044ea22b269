# Too many and too few arguments.
locals {
  n    = length(["a"], ["b"]) # ERROR: Too many function arguments
  name = upper() # ERROR: Not enough function arguments
}
