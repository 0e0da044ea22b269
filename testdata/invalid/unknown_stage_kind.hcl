# A misspelt stage kind: the detail suggests the closest kind and lists them.
stage "comand" "train" { # ERROR: Did you mean "command"? Known kinds: aggregate, command
  run = ["python", "train.py"]
}

# A stage that depends on the misspelt one is not reported again.
stage "command" "eval" {
  after = [stage.train]
  run   = ["python", "eval.py"]
}
