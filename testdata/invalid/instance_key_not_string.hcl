# Instances are keyed by strings.
stage "command" "prepare" {
  for_each = toset(["a", "b"])
  run      = ["python", "prepare.py", each.key]
}

stage "command" "train" {
  after = [stage.prepare[0]] # ERROR: Stage instances are keyed by strings
  run   = ["python", "train.py"]
}
