# A program's argument cannot hold a NUL byte.
stage "command" "train" {
  run = ["python", "train.py", "--name", "a\u0000b"] # ERROR: run[3] holds a NUL byte (at byte 1)
}
