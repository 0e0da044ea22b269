# A cycle among locals is reported along with another mistake in the same
# locals block: every error at once.
locals {
  out_dir  = "${local.run_name}/out" # ERROR: local.out_dir (local_cycle_and_other_error.hcl:4:3) -> local.run_name (local_cycle_and_other_error.hcl:5:3)
  run_name = basename(local.out_dir)
  title    = local.titel # ERROR: Did you mean "title"?
}

stage "command" "s" {
  run = ["echo", local.title]
}
