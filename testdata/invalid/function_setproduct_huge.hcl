# A product too large to build.
locals {
  grid = setproduct(range(1000), range(1000), range(1000)) # ERROR: the product would hold more than
}
