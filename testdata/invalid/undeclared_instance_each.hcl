# stage.x[each.key] where x lacks one of this stage's keys: the detail
# lists the keys it has.
stage "command" "prepare" {
  for_each = toset(["gsm8k", "math"])
  run      = ["python", "prepare.py", each.key]
}

stage "command" "eval" {
  for_each = toset(["gsm8k", "aime24", "math"])
  after    = [stage.prepare[each.key]] # ERROR: stage.prepare has no instance "aime24". Its instances: gsm8k, math.
  run      = ["python", "eval.py", each.key]
}
