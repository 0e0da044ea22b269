# Arguments must be strings (numbers convert; objects do not).
stage "command" "train" {
  run = ["python", "train.py", { epochs = 3 }] # ERROR: Invalid run
}
