# for_each over lists and sets: a list keeps its order, a set is sorted;
# each.value equals each.key.
variable "seeds" {
  type    = list(string)
  default = ["2", "0", "1"]
}

stage "command" "train" {
  for_each = var.seeds
  run      = ["python", "train.py", "--seed", each.key]
  outputs  = ["out/train/${each.key}.bin"]
}

stage "command" "tasks" {
  for_each = toset(["math", "gsm8k", "aime24"])
  run      = ["python", "eval.py", "--task", each.value]
}

stage "command" "tuple" {
  for_each = [for s in var.seeds : "seed-${s}"]
  run      = ["echo", each.key]
}

stage "command" "empty" {
  for_each = {}
  run      = ["echo", "never planned"]
}
