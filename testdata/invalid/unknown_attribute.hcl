# A misspelt generic attribute gets the closest name.
stage "command" "train" {
  run    = ["python", "train.py"]
  inptus = ["train.py"] # ERROR: Did you mean "inputs"?
}
