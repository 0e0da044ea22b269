# each has key and value only.
stage "command" "train" {
  for_each = { small = 1, large = 8 }
  run      = ["python", "train.py", each.name] # ERROR: there is no each.name
}
