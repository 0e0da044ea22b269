# A postcondition needs both a condition and an error_message.
stage "command" "eval" {
  run    = ["python", "eval.py"]
  result = "out/eval.json"
  postcondition { # ERROR: The argument "error_message" is required
    condition = self.result.accuracy >= 0.85
  }
}
