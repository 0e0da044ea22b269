# memory asks for at least one MiB.
stage "command" "train" {
  run    = ["python", "train.py"]
  memory = "0G" # ERROR: "0G" is out of range: at least 1M, at most 1024T
}
