# A postcondition may read the instance's attributes only: a misspelt one
# would fail on every apply after the process ran.
stage "command" "eval" {
  run    = ["python", "eval.py"]
  result = "out/eval.json"

  postcondition {
    condition     = self.bogus >= 0.5 # ERROR: There is no instance attribute named "bogus".
    error_message = "accuracy ${self.resul.accuracy} too low" # ERROR: Did you mean "result"?
  }
}
