# after orders stages without reading their results: a whole stage, or
# one instance of a for_each stage.
stage "command" "download" {
  for_each = toset(["a", "b", "c"])
  run      = ["python", "download.py", each.key]
}

stage "command" "index" {
  after = [stage.download]
  run   = ["python", "index.py"]
}

stage "command" "peek" {
  after = [stage.download["b"]]
  run   = ["python", "peek.py", "b"]
}

stage "command" "check" {
  for_each = toset(["a", "c"])
  after    = [stage.download[each.key], stage.index]
  run      = ["python", "check.py", each.key]
}
