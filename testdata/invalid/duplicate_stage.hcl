# Two stages with one name.
stage "command" "train" {
  run = ["python", "train.py"]
}

stage "command" "train" { # ERROR: A stage named "train" was already declared at
  run = ["python", "train_v2.py"]
}
