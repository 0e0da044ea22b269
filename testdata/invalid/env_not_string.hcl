# env values are strings.
stage "command" "train" {
  run = ["python", "train.py"]
  env = {
    SEEDS = [1, 2, 3] # ERROR: env.SEEDS must be a string.
  }
}
