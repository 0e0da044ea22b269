# A variable whose value fails its validation: the error_message is shown.
variable "variants" {
  type    = list(string)
  default = ["a", "b", "c"]
  validation {
    condition     = length(var.variants) == 4 # ERROR: Batches hold exactly 4 variants; got 3.
    error_message = "Batches hold exactly 4 variants; got ${length(var.variants)}."
  }
}
