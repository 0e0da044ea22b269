# A stage block whose closing brace is missing: the error points at the
# block that was never closed.
pipeline "unclosed" {}

stage "command" "train" { # ERROR: Unclosed configuration block
  run = ["python", "train.py"]

stage "command" "eval" {
  run = ["python", "eval.py"]
}
