# The local executor takes no arguments.
pipeline "p" {
  executor "local" {
    partition = "gpu" # ERROR: Unsupported argument
  }
}

stage "command" "a" {
  run = ["true"]
}
