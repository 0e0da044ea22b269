# Template directives, heredocs and conditionals.
variable "models" {
  type    = list(string)
  default = ["qwen", "llama"]
}

locals {
  config = <<-EOT
    models:
    %{for m in var.models~}
      - ${m}
    %{endfor~}
    mode: %{if length(var.models) > 1}batch%{else}single%{endif}
  EOT
  banner = "${upper(var.models[0])} and ${length(var.models) - 1} more"
}

stage "command" "write_config" {
  run = ["python", "write.py", local.config, local.banner]
}
