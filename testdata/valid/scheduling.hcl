# Scheduling and failure handling: resources, timeouts, retry on named
# failure classes, stderr classification, interruption and upstream
# failure policies. None of these enter the node key except env and gpus.
stage "command" "optimize" {
  run          = ["python", "optimize.py"]
  cpus         = 4
  gpus         = 2
  timeout      = "1h30m"
  kill_grace   = "30s"
  on_interrupt = "fail"
  outputs      = ["out/optimize/state.json"]
  retry {
    max = 2
    on  = ["timeout", "infrastructure", "memory_failure"]
  }
  classify = {
    setup          = ["ModuleNotFoundError", "No such file or directory: '.*\\.py'"]
    infrastructure = ["Connection (refused|reset)", "HTTP 50[234]"]
    memory_failure = ["CUDA out of memory"]
  }
}

stage "command" "evaluate" {
  for_each            = toset(["val", "test"])
  after               = [stage.optimize]
  run                 = ["python", "evaluate.py", "--split", each.key]
  concurrency         = 1
  timeout             = 1800
  on_upstream_failure = "run"
  retry {
    max = 1
  }
}
