# for_each = stage.NAME: one instance per instance of another stage, with
# the same keys; each.value is that instance (its results known after
# apply).
stage "command" "prepare" {
  for_each = toset(["gsm8k", "math"])
  run      = ["python", "prepare.py", each.key]
  outputs  = ["out/data/${each.key}.jsonl"]
}

stage "command" "eval" {
  for_each = stage.prepare
  run      = ["python", "eval.py", "--data", "out/data/${each.key}.jsonl"]
  result   = "out/eval/${each.key}.json"
}

stage "command" "report" {
  run = ["python", "report.py", jsonencode([for k, v in stage.eval : v.result.accuracy])]
}
