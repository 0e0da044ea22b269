# A command that names no program.
stage "command" "noop" {
  run = [] # ERROR: run must name a program: it is empty.
}
