# result is the path of one JSON file.
stage "command" "eval" {
  run    = ["python", "eval.py"]
  result = ["out/a.json", "out/b.json"] # ERROR: result is the path of a JSON file the stage writes, a string.
}
