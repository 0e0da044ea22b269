# on_interrupt is "rerun" or "fail".
stage "command" "optimize" {
  run          = ["python", "optimize.py"]
  on_interrupt = "resume" # ERROR: on_interrupt must be one of "rerun", "fail"; got "resume".
}
