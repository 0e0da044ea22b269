# after is a list.
stage "command" "prepare" {
  run = ["python", "prepare.py"]
}

stage "command" "train" {
  after = stage.prepare # ERROR: after takes a list of stage references
  run   = ["python", "train.py"]
}
