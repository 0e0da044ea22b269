# wait_for orders without keying: every job waits for both gates, and is
# keyed on its own gate only. The report reads the jobs' outputs through
# inputs alone, and is declared before them.
stage "command" "report" {
  run     = ["python", "report.py"]
  inputs  = ["out/"]
  outputs = ["report.md"]
}

stage "command" "gate" {
  for_each = toset(["a", "b"])
  run      = ["python", "gate.py", each.key]
  result   = "gates/${each.key}.json"
}

stage "command" "job" {
  for_each = toset(["a", "b"])
  wait_for = [stage.gate]
  after    = [stage.gate[each.key]]
  run      = ["python", "job.py", each.key]
  outputs  = ["out/${each.key}.txt"]
}
