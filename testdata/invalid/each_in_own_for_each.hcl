# for_each makes each: it cannot use it itself.
stage "command" "train" {
  for_each = toset([each.key]) # ERROR: each.key and each.value are made by stage.train's for_each, one instance each, so for_each itself cannot use them
  run      = ["true"]
}
