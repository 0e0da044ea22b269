# for_each over a result: known only after apply, so the plan cannot
# list the instances.
stage "command" "discover" {
  run    = ["python", "list_models.py"]
  result = "out/models.json"
}

stage "command" "eval" {
  for_each = toset(stage.discover.result.models) # ERROR: The for_each value depends on results that are known only after apply.
  run      = ["python", "eval.py", each.key]
}
