# self belongs to postconditions.
stage "command" "eval" {
  run    = ["python", "eval.py"]
  result = "out/eval.json"
  env    = { PREVIOUS = self.result.accuracy } # ERROR: self is available only inside a stage's postcondition block (and self.model_cache.url in a stage's attributes).
}
