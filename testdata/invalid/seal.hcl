# Seals pin files by digest; every mistake is refused before anything runs.
variable "train_sha256" {
  type    = string
  default = "8fb13a0cd8621e5fcacdee3ffe28b3a369975478ea7ab514781f3f190cba2488"
}

seal "data" {
  sha256 = { "data/train.parquet" = var.train_sha256 } # ERROR: Sealed file data/train.parquet does not match
}

seal "self" {
  sha256 = { "seal.hcl" = "0000000000000000000000000000000000000000000000000000000000000000" } # ERROR: Sealed file seal.hcl does not match
}

variable "secret_digest" {
  default   = "0000000000000000000000000000000000000000000000000000000000000000"
  sensitive = true
}

seal "secret" {
  sha256 = { "seal.hcl" = var.secret_digest } # ERROR: Sensitive value in a seal
}

seal "short" {
  sha256 = { "seal.hcl" = "abc" } # ERROR: Invalid digest in a seal
}

seal "list" {
  sha256 = ["seal.hcl"] # ERROR: Invalid seal
}

seal "stage" {
  sha256 = { "out.txt" = stage.gen.result.sha } # ERROR: Stage reference in a seal
}

seal "data" { # ERROR: Duplicate seal "data"
  sha256 = {}
}

stage "command" "gen" {
  run    = ["sh", "-c", "echo '{\"sha\": \"x\"}' > gen.json"]
  result = "gen.json"
}
