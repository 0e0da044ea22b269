# Terraform's names for what a stage calls after and for_each.
stage "command" "a" {
  run = ["true"]
}

stage "command" "b" {
  depends_on = [stage.a] # ERROR: A stage waits for others with after = [stage.NAME]
  count      = 2         # ERROR: A stage makes several nodes with for_each
  run        = ["true"]
}
