# An executor cairn does not have.
pipeline "p" {
  executor "kubernetes" {} # ERROR: Unknown executor
}

stage "command" "a" {
  run = ["true"]
}
