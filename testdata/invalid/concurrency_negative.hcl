# concurrency cannot be negative.
stage "command" "sweep" {
  for_each    = toset(["a", "b"])
  run         = ["python", "sweep.py", each.key]
  concurrency = -1 # ERROR: concurrency must be a whole number from 0 to 1048576.
}
