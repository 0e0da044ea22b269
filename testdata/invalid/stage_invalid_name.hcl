# Stage names are identifiers: they appear in references (stage.NAME).
stage "command" "train model" { # ERROR: Invalid stage name
  run = ["python", "train.py"]
}
