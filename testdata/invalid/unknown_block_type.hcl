# A top-level block cairn does not know: the detail lists the ones it does.
pipeline "blocks" {}

step "command" "train" { # ERROR: pipeline, variable, locals, stage and seal blocks
  run = ["python", "train.py"]
}
