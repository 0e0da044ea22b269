# wait_for dependencies count for cycles like any other.
stage "command" "gate" { # ERROR: stage.gate (cycle_wait_for.hcl:2:17) -> stage.job (cycle_wait_for.hcl:7:17) -> stage.gate (cycle_wait_for.hcl:2:17)
  wait_for = [stage.job]
  run      = ["true"]
}

stage "command" "job" {
  wait_for = [stage.gate]
  run      = ["true"]
}
