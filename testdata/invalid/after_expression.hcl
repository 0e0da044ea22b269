# An expression that holds a stage reference is not one.
stage "command" "b" {
  run = ["true"]
}

stage "command" "c" {
  after = [[stage.b][0]] # ERROR: Write stage.b itself, not an expression holding it
  run   = ["true"]
}

stage "command" "d" {
  after = [true ? stage.b : stage.c] # ERROR: Each element of after must be a stage reference
  run   = ["true"]
}
