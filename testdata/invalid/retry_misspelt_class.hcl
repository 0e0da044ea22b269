# A misspelt failure class.
stage "command" "train" {
  run = ["python", "train.py"]
  retry {
    max = 2
    on  = ["infrastucture"] # ERROR: Did you mean "infrastructure"?
  }
}
