# A sensitive variable: its value reaches the command's environment and
# arguments, and the node key holds its digest, but no plan shows it.
variable "api_key" {
  type      = string
  default   = "sk-corpus-secret-0000"
  sensitive = true
}

variable "endpoint" {
  type    = string
  default = "https://api.example.com/v1"
}

locals {
  auth_header = "Authorization: Bearer ${var.api_key}"
}

stage "command" "probe" {
  run = ["curl", "-H", local.auth_header, var.endpoint]
  env = {
    API_KEY  = var.api_key
    ENDPOINT = var.endpoint
  }
}
