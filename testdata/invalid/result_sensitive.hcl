# Paths appear in plans and logs: a result path must not be sensitive.
variable "run_id" {
  type      = string
  default   = "secret-run"
  sensitive = true
}

stage "command" "eval" {
  run    = ["python", "eval.py"]
  result = "out/${var.run_id}.json" # ERROR: result must not be sensitive
}
