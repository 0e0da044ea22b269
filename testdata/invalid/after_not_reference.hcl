# after takes stage references, not names.
stage "command" "prepare" {
  run = ["python", "prepare.py"]
}

stage "command" "train" {
  after = ["prepare"] # ERROR: Each element of after must be a stage reference
  run   = ["python", "train.py"]
}
