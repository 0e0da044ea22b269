# shell = true: run is one string for /bin/sh -c (or a list of one).
stage "command" "pipe" {
  shell = true
  run   = "python gen.py | sort | uniq -c > out/counts.txt"
}

stage "command" "one" {
  shell = true
  run   = ["echo $HOME && ls"]
}

stage "command" "argv" {
  shell = false
  run   = ["sh", "-c", "echo not through cairn's shell"]
}
