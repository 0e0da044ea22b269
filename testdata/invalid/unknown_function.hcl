# A misspelt function gets the closest name.
locals {
  n = lenght([1, 2]) # ERROR: Did you mean "length"?
}

stage "command" "a" {
  run = [uppper("x"), tostring(local.n)] # ERROR: Did you mean "upper"?
}

stage "command" "b" {
  run = [for x in ["a"] : uppper(x)] # ERROR: Did you mean "upper"?
}
