# retry names failure classes; a typo gets the closest one.
stage "command" "train" {
  run = ["python", "train.py"]
  retry {
    max = 2
    on  = ["timeout", "oom"] # ERROR: "oom" is not a failure class
  }
}
