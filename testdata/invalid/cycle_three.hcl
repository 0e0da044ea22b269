# A cycle through three stages, one of them by an instance reference.
stage "command" "prepare" { # ERROR: stage.prepare (cycle_three.hcl:2:17) -> stage.report (cycle_three.hcl:12:17) -> stage.eval (cycle_three.hcl:6:17) -> stage.prepare (cycle_three.hcl:2:17)
  run = ["python", "prepare.py", "--baseline", stage.report.result.best]
}

stage "command" "eval" {
  for_each = toset(["a", "b"])
  after    = [stage.prepare]
  run      = ["python", "eval.py", each.key]
}

stage "command" "report" {
  after = [stage.eval["a"]]
  run   = ["python", "report.py"]
}

# Not on the cycle: not reported.
stage "command" "publish" {
  after = [stage.report]
  run   = ["python", "publish.py"]
}
