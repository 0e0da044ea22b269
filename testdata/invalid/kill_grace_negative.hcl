# A negative grace period.
stage "command" "train" {
  run        = ["python", "train.py"]
  timeout    = "2h"
  kill_grace = "-5s" # ERROR: kill_grace must not be negative
}
