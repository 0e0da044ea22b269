# Local values defined in terms of each other.
locals {
  out_dir  = "${local.run_name}/out" # ERROR: local.out_dir (local_cycle.hcl:3:3) -> local.run_name (local_cycle.hcl:4:3)
  run_name = basename(local.out_dir)
}
