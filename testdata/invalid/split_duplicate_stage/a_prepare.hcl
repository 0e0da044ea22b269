# A directory pipeline: its files are one pipeline, so a stage name is
# unique across them.
pipeline "split" {}

stage "command" "prepare" {
  run = ["python", "prepare.py"]
}
