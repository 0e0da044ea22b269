# An empty path.
stage "command" "eval" {
  run    = ["python", "eval.py"]
  inputs = ["eval.py", ""] # ERROR: the path is empty
}
