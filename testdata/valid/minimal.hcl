# The smallest pipeline: one stage, no pipeline block (the name comes from
# the file name).
stage "command" "hello" {
  run = ["echo", "hello"]
}
