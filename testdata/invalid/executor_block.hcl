# The executor block: a known executor, its own arguments, constant values.
pipeline "p" {
  executor "slurm" {
    partition     = "gpu"
    max_submitted = 0 # ERROR: Invalid max_submitted
    poll_interval = "5 minutes" # ERROR: Invalid poll_interval
    nodes         = 2 # ERROR: Unsupported argument
  }
  executor "local" {} # ERROR: Duplicate executor block
}

stage "command" "a" {
  run = ["true"]
}
