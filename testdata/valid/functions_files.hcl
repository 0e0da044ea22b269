# The file functions read paths relative to the workspace root; a file's
# content in an argument makes it part of the node key.
locals {
  prompt  = chomp(file("data/prompt.txt"))
  config  = jsondecode(file("data/config.json"))
  tasks   = csvdecode(file("data/tasks.csv"))
  digest  = filesha256("data/ckpt/model.bin")
  present = fileexists("data/items.jsonl")
  absent  = fileexists("data/missing.jsonl")
  base    = basename("data/ckpt/model.bin")
  dir     = dirname("data/ckpt/model.bin")
}

stage "command" "grade" {
  for_each = { for t in local.tasks : t.task => tonumber(t.weight) }
  run      = ["python", "grade.py", "--task", each.key, "--weight", each.value, "--prompt", local.prompt]
  env = {
    CKPT_SHA256 = local.digest
    CKPT_NAME   = local.base
    CKPT_DIR    = local.dir
    HAS_ITEMS   = local.present ? "yes" : "no"
    HAS_MISSING = tostring(local.absent)
    THRESHOLD   = local.config.threshold
  }
}
