# A function cairn does not have.
locals {
  files = fileset("data", "*.jsonl") # ERROR: Call to unknown function
}
