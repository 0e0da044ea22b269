# retry on is a list of classes, even for one.
stage "command" "train" {
  run = ["python", "train.py"]
  retry {
    max = 1
    on  = "exit" # ERROR: on must be a list of failure classes, like ["exit"]
  }
}
