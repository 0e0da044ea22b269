# An evaluation reading the endpoints of a serve stage that serves another
# model: the serve stage would not start for it, and its items would go to
# TASK_ENDPOINTS.
stage "serve" "m" {
  run   = ["server", "--port", "{port}", "--model", "{model}"]
  model = "qwen"
  gpus  = 1
  port  = 18200
}

stage "evaluate" "e" {
  worker    = ["python3", "worker.py"]
  items     = [{ id = "q1", question = "1 + 1", answer = "2" }]
  model     = "llama"
  scores    = "out/e.jsonl"
  endpoints = stage.m.endpoints # ERROR: endpoints reads stage.m, which serves "qwen"; this stage evaluates "llama"
}

stage "evaluate" "same" {
  worker    = ["python3", "worker.py"]
  items     = [{ id = "q1", question = "1 + 1", answer = "2" }]
  model     = "qwen"
  scores    = "out/same.jsonl"
  endpoints = stage.m.endpoints
}
