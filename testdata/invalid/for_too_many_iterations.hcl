# Nested loops that would visit a billion elements are stopped early.
locals {
  grid = length(flatten([for a in range(1000) : [for b in range(1000) : [for c in range(1000) : c]]])) # ERROR: Too many iterations
}
