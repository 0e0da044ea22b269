# The command kind needs run.
stage "command" "train" { # ERROR: Missing required argument
  inputs = ["train.py"]
}
