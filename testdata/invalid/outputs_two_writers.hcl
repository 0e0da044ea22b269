# Two nodes may not declare one path for writing: both would write it, and
# which content stays would depend on timing.

# The same file in two stages, however it is spelled.
stage "command" "a" {
  run     = ["sh", "-c", "echo a > out.txt"]
  outputs = ["out.txt"]
}

stage "command" "b" {
  run     = ["sh", "-c", "echo b > out.txt"]
  outputs = ["notes.txt", "./out.txt"] # ERROR: stage.a (outputs, outputs_two_writers.hcl:7:14) and stage.b (outputs, outputs_two_writers.hcl:12:27) both write out.txt
}

# A result that is another stage's output.
stage "command" "scores" {
  run     = ["sh", "-c", "echo '{}' > scores.json"]
  outputs = ["scores.json"]
}

stage "command" "summary" {
  run    = ["sh", "-c", "echo '{}' > scores.json"]
  result = "scores.json" # ERROR: stage.scores (outputs, outputs_two_writers.hcl:18:14) and stage.summary (result, outputs_two_writers.hcl:23:12) both write scores.json
}

# Every instance of a for_each stage writes one file: the error names the
# instances.
stage "command" "gen" {
  for_each = toset(["x", "y", "z"])
  run      = ["sh", "-c", "echo ${each.key} > gen.txt"]
  outputs  = ["gen.txt"] # ERROR: stage.gen["x"], stage.gen["y"] and stage.gen["z"] all write gen.txt (outputs, outputs_two_writers.hcl:31:15)
}

# A file inside a folder another stage writes.
stage "command" "reports" {
  run     = ["sh", "-c", "mkdir -p reports && echo r > reports/r.txt"]
  outputs = ["reports"]
}

stage "command" "inside" {
  run    = ["sh", "-c", "mkdir -p reports/inside && echo '{}' > reports/inside/r.json"]
  result = "reports/inside/r.json" # ERROR: stage.inside writes reports/inside/r.json (result, outputs_two_writers.hcl:42:12), inside reports, a folder stage.reports writes (outputs, outputs_two_writers.hcl:37:14)
}

# Two for_each stages writing the same paths key by key: one error.
stage "command" "left" {
  for_each = toset(["1", "2", "3"])
  run      = ["sh", "-c", "echo l > cells/${each.key}"]
  outputs  = ["cells/${each.key}"]
}

stage "command" "right" {
  for_each = toset(["1", "2", "3"])
  run      = ["sh", "-c", "echo r > cells/${each.key}"]
  outputs  = ["cells/${each.key}"] # ERROR: stage.left["1"] (outputs, outputs_two_writers.hcl:49:15) and stage.right["1"] (outputs, outputs_two_writers.hcl:55:15) both write cells/1. The same declarations clash 2 more times: stage.left["2"] and stage.right["2"] both write cells/2; stage.left["3"] and stage.right["3"] both write cells/3.
}
