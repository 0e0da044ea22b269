# "outside" is a symlink that leads out of the workspace (the test makes
# it): a path through it escapes too.
stage "command" "eval" {
  run    = ["python", "eval.py"]
  result = "outside/eval.json" # ERROR: resolves through a symlink to
}
