# An instance key on a stage without for_each.
stage "command" "prepare" {
  run = ["python", "prepare.py"]
}

stage "command" "train" {
  after = [stage.prepare["all"]] # ERROR: stage.prepare has no for_each, so it has no instance "all"
  run   = ["python", "train.py"]
}
