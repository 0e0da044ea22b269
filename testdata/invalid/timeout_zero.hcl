# timeout = "0s" is no limit at all: refused rather than silently ignored.
stage "command" "train" {
  run     = ["python", "train.py"]
  timeout = "0s" # ERROR: timeout must be longer than 0s; for no time limit, leave timeout out
}
