# lm-evaluation-harness as a cairn stage, through cairn's model-call cache
# (docs/model-cache.md): every request the harness sends is answered from
# cairn's item store when it was answered before (by this pipeline or any
# other on the same cache), else forwarded to the endpoints and stored.
# Kill it at any point and apply again: the harness starts over, and only
# the requests never answered reach the model.
#
#   cairn apply pipelines/lm_eval_cached.hcl \
#     --var endpoint=http://gpu1:8000/v1 --var model=Qwen/Qwen3-8B \
#     --var python=.venv/bin/python
#
# Both ways lm-eval talks to a server: mode = "chat" runs the generate_until
# task with local-chat-completions; mode = "completions" the loglikelihood
# task with local-completions (echo + logprobs, and the server's tokenizer
# through tokenizer_backend=remote, as vLLM serves it).

variable "endpoint" {
  type        = string
  description = "The model server's base URL, ending in /v1 (vLLM, or cairn-sim-model)."
}
variable "model" {
  type    = string
  default = "sim-model"
}
variable "python" {
  type        = string
  description = "The Python with lm-eval[api] installed (a virtual environment's bin/python)."
  default     = "python3"
}
variable "mode" {
  type    = string
  default = "chat"
  validation {
    condition     = contains(["chat", "completions"], var.mode)
    error_message = "mode is \"chat\" (local-chat-completions, generate_until) or \"completions\" (local-completions, loglikelihood)."
  }
}
variable "num_concurrent" {
  type    = number
  default = 1
}
variable "out" {
  type    = string
  default = "out/lm_eval"
}

locals {
  task  = var.mode == "chat" ? "cairn_arith_gen" : "cairn_arith_mc"
  route = var.mode == "chat" ? "chat/completions" : "completions"
  extra = var.mode == "chat" ? "tokenized_requests=False" : "tokenizer_backend=remote,tokenized_requests=True"
}

stage "command" "lm_eval" {
  run = concat([var.python, "pipelines/model_cache/lm_eval/run.py",
    "--model", var.mode == "chat" ? "local-chat-completions" : "local-completions",
    "--model_args", "model=${var.model},base_url=${self.model_cache.url}/${local.route},num_concurrent=${var.num_concurrent},max_retries=3,${local.extra}",
    "--include_path", "pipelines/model_cache/lm_eval",
    "--tasks", local.task,
    "--output_path", var.out,
    "--log_samples"],
  var.mode == "chat" ? ["--apply_chat_template"] : [])
  inputs  = ["pipelines/model_cache/lm_eval"]
  outputs = [var.out]
  env = {
    HF_DATASETS_OFFLINE = "1"
    HF_HUB_OFFLINE      = "1"
    OPENAI_API_KEY      = "unused"
  }
  model_cache = { endpoints = [var.endpoint] }
}
