# timeout takes a duration like "60m".
stage "command" "train" {
  run     = ["python", "train.py"]
  timeout = "soon" # ERROR: "soon" is not a duration
}
