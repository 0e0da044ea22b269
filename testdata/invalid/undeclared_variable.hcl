# A misspelt variable name gets the closest declared one.
variable "model" {
  type    = string
  default = "llama-3-8b"
}

stage "command" "train" {
  run = ["python", "train.py", "--model", var.modle] # ERROR: There is no variable named "modle". Did you mean "model"?
}
