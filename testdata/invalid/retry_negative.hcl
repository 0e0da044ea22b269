# retry max counts extra attempts.
stage "command" "train" {
  run = ["python", "train.py"]
  retry {
    max = -1 # ERROR: retry max is the number of extra attempts: 0 or more.
  }
}
