# Locals are evaluated before anything runs.
stage "command" "train" {
  run    = ["python", "train.py"]
  result = "out/train.json"
}

locals {
  best = stage.train.result.accuracy # ERROR: Local values are evaluated before any stage runs
}
