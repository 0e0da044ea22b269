# retry without max.
stage "command" "train" {
  run = ["python", "train.py"]
  retry { # ERROR: The argument "max" is required
    on = ["timeout"]
  }
}
