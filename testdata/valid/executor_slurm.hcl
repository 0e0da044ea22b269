# A pipeline whose nodes run as Slurm jobs. The executor does not enter the
# nodes' keys: the plan is the same as on the local executor.
pipeline "on-slurm" {
  executor "slurm" {
    partition     = "gpu"
    account       = "lab"
    qos           = "normal"
    extra_args    = ["--constraint=a100"]
    max_submitted = 50
    poll_interval = "5s"
  }
}

stage "command" "hello" {
  run     = ["echo", "hello"]
  gpus    = 1
  timeout = "10m"
}
