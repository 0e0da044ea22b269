# A stage has at most one retry block.
stage "command" "train" {
  run = ["python", "train.py"]
  retry {
    max = 1
  }
  retry { # ERROR: A stage has at most one retry block; the first of stage.train is at retry_duplicate.hcl:4:3.
    max = 2
  }
}
