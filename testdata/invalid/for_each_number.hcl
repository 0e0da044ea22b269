# for_each over a count: cairn keys instances by name, not number.
stage "command" "seed" {
  for_each = 3 # ERROR: for_each takes a map, a set of strings or a list of strings; got number.
  run      = ["python", "train.py"]
}
