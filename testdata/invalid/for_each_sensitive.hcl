# Instance keys appear in plans and addresses: no secrets in for_each.
variable "api_keys" {
  type      = map(string)
  default   = { openai = "sk-not-a-real-key" }
  sensitive = true
}

stage "command" "probe" {
  for_each = var.api_keys # ERROR: for_each must not use sensitive values
  run      = ["python", "probe.py", each.key]
}
