# One argument over the kernel's 128 KiB limit could never start.
locals {
  chunk = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
  wide  = "${local.chunk}${local.chunk}"
}

stage "command" "train" {
  run = ["python", "train.py", join("", [for i in range(600) : local.wide])] # ERROR: run[2] is 153600 bytes: Linux refuses a single argument over 128 KiB
}

stage "command" "shell" {
  shell = true
  run   = "echo ${join("", [for i in range(600) : local.wide])}" # ERROR: run is 153605 bytes
}
