stage "command" "prepare" { # ERROR: a_prepare.hcl:5:17
  run = ["python", "prepare_again.py"]
}

stage "command" "train" {
  after = [stage.prepare]
  run   = ["python", "train.py", var.epochs] # ERROR: There is no variable named "epochs".
}
