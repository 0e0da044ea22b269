stage "command" "prepare" {
  for_each = toset(var.tasks)
  run      = ["python", "prepare.py", each.key, "--out", local.out]
}

stage "command" "report" {
  after = [stage.prepare]
  run   = ["python", "report.py", "--dir", local.out]
}
