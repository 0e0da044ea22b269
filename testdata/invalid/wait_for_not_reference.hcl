# wait_for takes stage references, like after.
stage "command" "gate" {
  run = ["true"]
}

stage "command" "list" {
  wait_for = stage.gate # ERROR: wait_for takes a list of stage references
  run      = ["true"]
}

stage "command" "name" {
  wait_for = ["gate"] # ERROR: write stage.gate, without quotes
  run      = ["true"]
}

stage "command" "attr" {
  wait_for = [stage.gate.result] # ERROR: Write stage.gate: wait_for names what to wait for
  run      = ["true"]
}

stage "command" "missing" {
  wait_for = [stage.gaet] # ERROR: Did you mean "gate"?
  run      = ["true"]
}

stage "command" "each" {
  for_each = toset(["x"])
  run      = ["true"]
}

stage "command" "prefixed" {
  after    = ["stage.gate"] # ERROR: write stage.gate, without quotes
  wait_for = ["stage.each[\"x\"]"] # ERROR: write stage.each["x"], without quotes
  run      = ["true"]
}
