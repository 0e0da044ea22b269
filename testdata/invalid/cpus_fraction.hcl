# cpus is a whole number of slots.
stage "command" "train" {
  run  = ["python", "train.py"]
  cpus = 1.5 # ERROR: cpus must be a whole number from 0 to 1048576.
}
