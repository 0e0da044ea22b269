# A classify pattern that is not a regular expression.
stage "command" "train" {
  run      = ["python", "train.py"]
  classify = { setup = ["ModuleNotFoundError: (No module"] } # ERROR: is not a valid regular expression
}
