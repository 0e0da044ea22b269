# Paths stay inside the workspace.
stage "command" "train" {
  run     = ["python", "train.py"]
  inputs  = ["train.py", "../shared/data.jsonl"] # ERROR: "../shared/data.jsonl" leaves the workspace root
  outputs = ["out/model.bin"]
}
