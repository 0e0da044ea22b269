# on_upstream_failure is "skip" or "run".
stage "command" "train" {
  run = ["python", "train.py"]
}

stage "command" "report" {
  after               = [stage.train]
  run                 = ["python", "report.py"]
  on_upstream_failure = "continue" # ERROR: on_upstream_failure must be one of "skip", "run"; got "continue".
}
