# A list for_each holds strings (the keys); numbers are not keys.
stage "command" "train" {
  for_each = [0, 1, 2] # ERROR: A list or set for_each must hold strings (the instance keys); found number.
  run      = ["python", "train.py", "--seed", each.key]
}
