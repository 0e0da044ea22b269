# One instance of a for_each stage, by a key it does not have.
stage "command" "serve" {
  for_each = toset(["llama", "qwen"])
  run      = ["python", "serve.py", each.key]
}

stage "command" "bench" {
  run = ["python", "bench.py", stage.serve["lama"].result.url] # ERROR: stage.serve has no instance "lama". Did you mean "llama"?
}
