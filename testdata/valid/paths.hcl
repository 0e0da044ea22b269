# path.pipeline is the pipeline's folder relative to the workspace root
# ("." here); path.root is the root itself (absolute, so it stays out of
# node keys).
locals {
  script  = "${path.pipeline}/data/train.py"
  checked = fileexists("${path.root}/data/train.py")
}

stage "command" "train" {
  run         = ["python", local.script]
  inputs      = [local.script]
  description = "Trains from the script next to the pipeline."
  timeout     = local.checked ? "10m" : "1m"
}
