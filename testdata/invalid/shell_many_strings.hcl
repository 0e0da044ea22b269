# With shell = true, run is one string for /bin/sh -c.
stage "command" "train" {
  shell = true
  run   = ["python train.py", "--epochs 3"] # ERROR: With shell = true, run is one string
}
