# A format width that would need a gigabyte.
locals {
  pad = format("%0999999999d", 7) # ERROR: a width or precision in the format is over
}
