# Numbers, conversions, encodings, dates, hashes and error handling.
locals {
  nums     = [abs(-3), ceil(2.1), floor(2.9), log(8, 2), max(1, 5, 3), min(4, 2), pow(2, 10), signum(-7), parseint("ff", 16), sum([1, 2, 3.5])]
  conv     = [tostring(12), tonumber("3.5"), tobool("true")]
  list     = tolist(["a", "b"])
  set      = toset(["b", "a", "b"])
  map      = tomap({ a = "1", b = "2" })
  config   = jsondecode("{\"threshold\": 0.85, \"k\": [1, 2]}")
  encoded  = jsonencode({ b = 1, a = [true, null] })
  rows     = csvdecode("task,weight\ngsm8k,1\nmath,2\n")
  digest   = sha256("cairn")
  day      = formatdate("YYYY-MM-DD", "2024-05-01T12:00:00Z")
  later    = timeadd("2024-05-01T12:00:00Z", "36h")
  fallback = try(local.config.missing, "default")
  ok       = can(local.config.threshold)
}

stage "command" "numbers" {
  run = ["echo", jsonencode({
    nums     = local.nums
    conv     = local.conv
    list     = local.list
    set      = local.set
    map      = local.map
    config   = local.config
    encoded  = local.encoded
    rows     = local.rows
    digest   = local.digest
    day      = local.day
    later    = local.later
    fallback = local.fallback
    ok       = local.ok
  })]
}
