# for_each over a stage that has no for_each: it is one instance, with no
# instance keys to iterate.
stage "command" "prepare" {
  run = ["python", "prepare.py"]
}

stage "command" "train" {
  for_each = stage.prepare # ERROR: stage.prepare has no for_each: it is one instance
  run      = ["python", "train.py", each.key]
}
