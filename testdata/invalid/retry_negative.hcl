# retry max counts extra attempts.
stage "command" "train" {
  run = ["python", "train.py"]
  retry {
    max = -1 # ERROR: max must be a whole number, 0 or more (the extra attempts after the first), not -1.
  }
}
