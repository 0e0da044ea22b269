# after names a node, not one of its attributes; the fix is in the message.
stage "command" "b" {
  for_each = toset(["x", "y"])
  run      = ["sh", "-c", "echo '{}' > b_${each.key}.json"]
  result   = "b_${each.key}.json"
}

stage "command" "all" {
  after = [stage.b.result] # ERROR: Write stage.b: after names what to wait for
  run   = ["true"]
}

stage "command" "one" {
  for_each = toset(["x", "y"])
  after    = [stage.b[each.key].result] # ERROR: Write stage.b[each.key]: after names what to wait for
  run      = ["true"]
}

stage "command" "keyed" {
  after = [stage.b["x"].status] # ERROR: Write stage.b["x"]: after names what to wait for
  run   = ["true"]
}
