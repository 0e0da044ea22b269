# A list element without its separating comma.
stage "command" "train" {
  run = ["python" "train.py"] # ERROR: Missing item separator
}
