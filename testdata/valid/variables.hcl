# Variable types: primitives, collections, objects with optional
# attributes and their defaults, nullable, and validations that pass.
variable "tag" {
  type        = string
  default     = "baseline"
  description = "Names the run's output folder."
}

variable "epochs" {
  type    = number
  default = 3
  validation {
    condition     = var.epochs >= 1 && floor(var.epochs) == var.epochs
    error_message = "epochs is a whole number of at least 1."
  }
}

variable "fast" {
  type    = bool
  default = false
}

variable "seeds" {
  type    = set(string)
  default = ["1", "0"]
}

variable "lrs" {
  type    = map(number)
  default = { small = 0.001, large = 0.0003 }
}

variable "model" {
  type = object({
    name  = string
    tp    = optional(number, 1)
    quant = optional(string)
    extra = optional(list(string), [])
  })
  default = { name = "llama-3-8b" }
}

variable "notes" {
  type    = string
  default = null
}

variable "anything" {
  default = ["untyped", 1]
}

stage "command" "train" {
  for_each = { for pair in setproduct(var.seeds, keys(var.lrs)) : "${pair[1]}-s${pair[0]}" => { seed = pair[0], lr = var.lrs[pair[1]] } }
  run = concat(
    ["python", "train.py", "--tag", var.tag, "--epochs", var.epochs, "--seed", each.value.seed, "--lr", each.value.lr],
    ["--model", var.model.name, "--tp", var.model.tp, "--quant", coalesce(var.model.quant, "none")],
    var.model.extra,
    var.fast ? ["--fast"] : [],
    var.notes == null ? [] : ["--notes", var.notes],
  )
  gpus = var.model.tp
}

stage "command" "untyped" {
  run = ["echo", jsonencode(var.anything)]
}
