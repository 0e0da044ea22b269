# memory is a size with its unit, as Slurm's --mem takes it.
stage "command" "train" {
  run    = ["python", "train.py"]
  memory = 16 # ERROR: "16" is not a memory size: write a whole number and a unit
}
