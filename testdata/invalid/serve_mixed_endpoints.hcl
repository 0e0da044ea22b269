# Endpoints lists that mix a serve stage's endpoints with another server's:
# every result is keyed by the one serve stage, so the other servers'
# answers would be stored as its own.
variable "task_endpoints" {
  default = ["http://127.0.0.1:18600/v1"]
}

stage "serve" "a" {
  run     = ["server", "--port", "{port}"]
  model   = "sim"
  weights = "sha256:aaaaaaaaaaaaaaaaaaaa"
  port    = 19500
}

stage "serve" "b" {
  run     = ["server", "--port", "{port}", "--wrong-rate", "1"]
  model   = "sim"
  weights = "sha256:bbbbbbbbbbbbbbbbbbbb"
  port    = 19600
}

stage "serve" "c" {
  for_each = { x = "cccccccccccccccccccc", y = "dddddddddddddddddddd" }
  run      = ["server", "--port", "{port}"]
  model    = "sim"
  weights  = "sha256:${each.value}"
  port     = each.key == "x" ? 19700 : 19800
}

stage "evaluate" "both" {
  worker    = ["python3", "worker.py"]
  items     = [{ id = "q1", question = "1 + 1", answer = "2" }]
  model     = "sim"
  scores    = "out/both.jsonl"
  endpoints = concat(stage.a.endpoints, stage.b.endpoints) # ERROR: endpoints reads the endpoints of stage.a and stage.b
}

stage "evaluate" "plain" {
  worker    = ["python3", "worker.py"]
  items     = [{ id = "q1", question = "1 + 1", answer = "2" }]
  model     = "sim"
  scores    = "out/plain.jsonl"
  endpoints = concat(stage.a.endpoints, ["http://127.0.0.1:18600/v1"]) # ERROR: endpoints reads the endpoints of stage.a and a plain URL
}

stage "command" "harness" {
  run         = ["true"]
  model_cache = { endpoints = concat(stage.b.endpoints, var.task_endpoints) } # ERROR: endpoints reads the endpoints of stage.b and var.task_endpoints
}

stage "evaluate" "one" {
  worker    = ["python3", "worker.py"]
  items     = [{ id = "q1", question = "1 + 1", answer = "2" }]
  model     = "sim"
  scores    = "out/one.jsonl"
  endpoints = stage.a.endpoints
}

stage "evaluate" "instances" {
  worker    = ["python3", "worker.py"]
  items     = [{ id = "q1", question = "1 + 1", answer = "2" }]
  model     = "sim"
  scores    = "out/instances.jsonl"
  endpoints = concat(stage.c["x"].endpoints, stage.c["y"].endpoints) # ERROR: endpoints reads the endpoints of stage.c["x"] and stage.c["y"]
}

stage "evaluate" "instance" {
  for_each  = toset(["x", "y"])
  worker    = ["python3", "worker.py"]
  items     = [{ id = "q1", question = "1 + 1", answer = "2" }]
  model     = "sim"
  scores    = "out/instance-${each.key}.jsonl"
  endpoints = stage.c[each.key].endpoints
}

stage "optimize" "reflection" {
  run                 = ["python3", "method.py"]
  out                 = "out/reflection"
  budget              = 10
  bundle              = ["bundle/"]
  worker              = ["python3", "worker.py", "{bundle}/system.txt"]
  items               = "train.jsonl"
  model               = "sim"
  endpoints           = stage.a.endpoints
  reflection_model    = "sim"
  reflection_base_url = concat(stage.a.endpoints, stage.b.endpoints) # ERROR: reflection_base_url reads the endpoints of stage.a and stage.b
}
