# A stray character after an argument.
stage "command" "train" {
  run    = ["python", "train.py"] @ # ERROR: Invalid character # ERROR: Missing newline after argument
  inputs = ["train.py"]
}
