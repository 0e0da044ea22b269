# A reference that starts with something cairn does not have.
stage "command" "train" {
  run = ["python", "train.py", vars.model] # ERROR: "vars" is not something a pipeline can refer to. Did you mean "var"?
}
