# for_each over one instance's result.
stage "command" "discover" {
  for_each = toset(["hf", "local"])
  run      = ["python", "list_models.py", each.key]
  result   = "out/${each.key}.json"
}

stage "command" "eval" {
  for_each = stage.discover["hf"].result # ERROR: but not over one instance's results
  run      = ["python", "eval.py", each.key]
}
