# Two stages that wait for each other; each is named with its position.
stage "command" "train" { # ERROR: stage.train (cycle_two.hcl:2:17) -> stage.eval (cycle_two.hcl:7:17) -> stage.train (cycle_two.hcl:2:17)
  after = [stage.eval]
  run   = ["python", "train.py"]
}

stage "command" "eval" {
  run = ["python", "eval.py", stage.train.result.checkpoint]
}
