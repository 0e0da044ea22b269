# nullable = false refuses a null default.
variable "tag" { # ERROR: The variable is declared nullable = false and must not be null.
  type     = string
  default  = null
  nullable = false
}
