# A reference to a local value that no locals block declares.
locals {
  data_dir = "data"
}

stage "command" "train" {
  run = ["python", "train.py", "--out", local.out_dir] # ERROR: Reference to undeclared local value
}
