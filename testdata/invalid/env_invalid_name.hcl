# Environment variable names are letters, digits and underscores, not
# starting with a digit.
stage "command" "train" {
  run = ["python", "train.py"]
  env = {
    "CUDA-VISIBLE" = "0" # ERROR: "CUDA-VISIBLE" is not a valid environment variable name.
    "2FAST"        = "1" # ERROR: "2FAST" is not a valid environment variable name.
    HF_HOME        = "/tmp/hf"
  }
}
