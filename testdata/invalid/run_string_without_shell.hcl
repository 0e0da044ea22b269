# run as one string needs shell = true: cairn never splits a command line.
stage "command" "train" {
  run = "python train.py --epochs 3" # ERROR: cairn never passes it through a shell unless the stage says shell = true
}
