# Declared inputs: a file, a directory (its whole tree), and a file that
# does not exist yet (the key is then known only after apply).
stage "command" "train" {
  run     = ["python", "data/train.py"]
  inputs  = ["data/train.py", "data/ckpt/", "data/items.jsonl"]
  outputs = ["out/model.bin"]
  result  = "out/train.json"
}

stage "command" "later" {
  run    = ["python", "use.py"]
  inputs = ["out/generated.txt"]
}

stage "command" "downstream" {
  run    = ["python", "eval.py", "--checkpoint", stage.train.result.checkpoint]
  inputs = ["data/items.jsonl"]
}
