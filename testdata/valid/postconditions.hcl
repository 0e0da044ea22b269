# Postconditions check a stage's result with self; a later stage reads the
# result through stage.NAME[KEY].result.
variable "threshold" {
  type    = number
  default = 0.85
}

stage "command" "ruler" {
  for_each = toset(["v1", "v2"])
  run      = ["python", "run_ruler.py", "--variant", each.key]
  result   = "out/ruler/${each.key}/latest.json"
  postcondition {
    condition     = self.result.accuracy >= var.threshold
    error_message = "RULER accuracy ${self.result.accuracy} < ${var.threshold} for ${self.key}"
  }
  postcondition {
    condition     = self.exit_code == 0 && self.duration_s < 3600
    error_message = "ruler took too long"
  }
}

stage "command" "summary" {
  run = ["python", "summary.py", "--v1", stage.ruler["v1"].result.accuracy, "--v2", stage.ruler["v2"].result.accuracy]
}
