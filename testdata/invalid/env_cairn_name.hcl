# A CAIRN_ name is cairn's: the hint is to rename it, not to ask for GPUs.
stage "command" "train" {
  run = ["python", "train.py"]
  env = { CAIRN_SEED = "1" } # ERROR: CAIRN_SEED is set by cairn itself (names starting with CAIRN_ carry the node's context); a stage cannot set it. Give the variable another name.
}
