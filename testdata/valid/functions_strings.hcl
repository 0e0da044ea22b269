# The string functions.
locals {
  name    = "  Llama-3-8B-Instruct  "
  clean   = lower(trimspace(local.name))
  parts   = split("-", local.clean)
  joined  = join("_", local.parts)
  title   = title("mean at sixteen")
  upper   = upper(local.clean)
  padded  = format("%-12s|%05.1f|%d", "acc", 85.25, 16)
  rows    = formatlist("%s=%d", ["a", "b"], [1, 2])
  swapped = replace(local.clean, "/-(\\d+)b/", "@$${1}B")
  ver     = regex("\\d+", local.clean)
  nums    = regexall("\\d+", "v1 v22 v333")
  short   = substr(local.clean, 0, 5)
  trimmed = [trim("--x--", "-"), trimprefix("run-7", "run-"), trimsuffix("a.json", ".json"), chomp("line\n")]
  indent  = indent(2, "a\nb")
  rev     = strrev("abc")
}

stage "command" "strings" {
  run = ["echo", jsonencode({
    name    = local.name
    clean   = local.clean
    parts   = local.parts
    joined  = local.joined
    title   = local.title
    upper   = local.upper
    padded  = local.padded
    rows    = local.rows
    swapped = local.swapped
    ver     = local.ver
    nums    = local.nums
    short   = local.short
    trimmed = local.trimmed
    indent  = local.indent
    rev     = local.rev
  })]
}
