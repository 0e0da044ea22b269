# file() of a file that does not exist.
locals {
  prompt = file("prompts/missing.txt") # ERROR: cannot read prompts/missing.txt
}
