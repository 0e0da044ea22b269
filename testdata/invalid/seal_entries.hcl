# An error about one pinned file points at its entry, not at the map.
seal "many" {
  sha256 = {
    "seal_entries.hcl" = "0000000000000000000000000000000000000000000000000000000000000000" # ERROR: Sealed file seal_entries.hcl does not match
    "other.txt"        = "xyz"                                                              # ERROR: Invalid digest in a seal
  }
}

stage "command" "a" {
  run = ["true"]
}
