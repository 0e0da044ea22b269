# retry max is a whole number of extra attempts.
stage "command" "train" {
  run = ["python", "train.py"]
  retry {
    max = 1.5 # ERROR: max must be a whole number, 0 or more (the extra attempts after the first), not 1.5.
  }
}
