# A null argument is named as null, whatever the list's element type.
stage "command" "train" {
  run = ["python", "train.py", null] # ERROR: element 2 is null, not a string
}
