# each exists only in a stage with for_each.
stage "command" "train" {
  run = ["python", "train.py", each.key] # ERROR: stage.train has no for_each, so each.key and each.value do not exist.
}
