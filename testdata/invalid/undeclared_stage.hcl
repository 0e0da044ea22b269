# after names a stage that does not exist; the closest is suggested.
stage "command" "prepare" {
  run = ["python", "prepare.py"]
}

stage "command" "train" {
  after = [stage.prepre] # ERROR: There is no stage named "prepre". Did you mean "prepare"?
  run   = ["python", "train.py"]
}
