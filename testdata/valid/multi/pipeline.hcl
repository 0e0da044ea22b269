# A directory pipeline: every .hcl file of the folder, read in name order,
# makes one pipeline.
pipeline "multi" {
  description = "Split across files."
}
