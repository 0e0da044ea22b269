# gpus counts devices.
stage "command" "train" {
  run  = ["python", "train.py"]
  gpus = "two" # ERROR: gpus must be a whole number.
}
