# A misspelt kind attribute (run is the command kind's): the block then
# also lacks its required run.
stage "command" "train" { # ERROR: The argument "run" is required
  runn = ["python", "train.py"] # ERROR: Did you mean "run"?
}
