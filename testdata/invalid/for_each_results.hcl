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

# Known keys, values made of a result: each.value is known only after
# apply too.
stage "command" "per_key" {
  for_each = { for k in ["a", "b"] : k => stage.discover.result } # ERROR: The for_each values depend on stage results
  run      = ["echo", each.key]
}
