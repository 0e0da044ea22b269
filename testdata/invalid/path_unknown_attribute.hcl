# path has pipeline and root.
stage "command" "train" {
  run = ["python", "${path.module}/train.py"] # ERROR: There is no path attribute named "module".
}
