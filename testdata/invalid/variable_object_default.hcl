# An object default missing a required attribute.
variable "model" {
  type = object({
    name = string
    tp   = optional(number, 1)
  })
  default = { tp = 2 } # ERROR: attribute "name" is required
}
