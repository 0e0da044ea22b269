# A stage cannot read its own result; its postconditions use self.
stage "command" "eval" {
  run    = ["python", "eval.py", "--previous", stage.eval.result.accuracy] # ERROR: stage.eval cannot refer to itself
  result = "out/eval.json"
}
