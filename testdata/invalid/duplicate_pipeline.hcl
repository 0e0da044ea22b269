# One pipeline block per pipeline.
pipeline "train" {}

pipeline "eval" {} # ERROR: A pipeline has one pipeline block; the first is at
