# each outside any stage.
locals {
  name = "run-${each.key}" # ERROR: each is available only inside a stage with for_each.
}
