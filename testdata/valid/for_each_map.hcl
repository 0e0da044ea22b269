# for_each over a map: instances sorted by key, each.value holds the
# value; stage.x[each.key] depends on one instance, not the whole stage.
pipeline "for-each-map" {
  description = "One model server per model, one benchmark per server."
}

variable "models" {
  type = map(object({
    path = string
    tp   = number
  }))
  default = {
    qwen  = { path = "models/qwen-7b", tp = 1 }
    llama = { path = "models/llama-8b", tp = 2 }
  }
}

stage "command" "serve" {
  for_each = var.models
  run      = ["python", "serve.py", "--model", each.value.path, "--tp", each.value.tp]
  gpus     = each.value.tp
  result   = "out/serve/${each.key}.json"
}

stage "command" "bench" {
  for_each = var.models
  run      = ["python", "bench.py", "--url", stage.serve[each.key].result.url]
  result   = "out/bench/${each.key}.json"
}
