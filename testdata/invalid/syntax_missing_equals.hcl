# An argument without its equals sign.
stage "command" "train" {
  run ["python", "train.py"] # ERROR: To set an argument, use the equals sign
}
