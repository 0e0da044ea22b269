# A top-level block cairn does not know: the detail lists the ones it does.
pipeline "blocks" {}

step "command" "train" { # ERROR: pipeline, variable, locals and stage blocks
  run = ["python", "train.py"]
}
