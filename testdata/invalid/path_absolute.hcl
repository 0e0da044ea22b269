# Absolute paths are refused: a pipeline must work in any checkout.
stage "command" "train" {
  run     = ["python", "train.py"]
  outputs = ["/data/checkpoints/model.bin"] # ERROR: "/data/checkpoints/model.bin" is absolute
}
