# A kind nothing like a known one: no suggestion, but the list of kinds.
stage "notebook" "explore" { # ERROR: There is no stage kind "notebook". Known kinds: aggregate, command
  path = "explore.ipynb"
}
