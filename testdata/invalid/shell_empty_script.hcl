# With shell = true, run is a script: an empty one would do nothing.
stage "command" "empty" {
  shell = true
  run   = "" # ERROR: it is empty, and would do nothing
}

stage "command" "blank" {
  shell = true
  run   = ["  \n"] # ERROR: it is empty, and would do nothing
}
