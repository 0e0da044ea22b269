# classify maps failure classes to stderr patterns.
stage "command" "train" {
  run = ["python", "train.py"]
  classify = {
    oom = ["CUDA out of memory"] # ERROR: "oom" is not a failure class
  }
}
