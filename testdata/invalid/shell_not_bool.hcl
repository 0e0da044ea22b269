# shell is true or false.
stage "command" "train" {
  shell = "yes" # ERROR: shell must be true or false.
  run   = "python train.py"
}
