# The collection functions.
locals {
  a        = ["x", "y", "z", "y"]
  b        = ["y", "w"]
  m        = { lr = "0.1", bs = "32" }
  n        = length(local.a)
  flat     = flatten([["a", "b"], ["c"], []])
  uniq     = distinct(local.a)
  cat      = concat(local.a, local.b)
  ks       = keys(local.m)
  vs       = values(local.m)
  lr       = lookup(local.m, "lr", "0.01")
  wd       = lookup(local.m, "wd", "0")
  merged   = merge(local.m, { wd = "0.0" })
  zipped   = zipmap(["k1", "k2"], ["v1", "v2"])
  grid     = setproduct(["s", "m"], ["1", "2"])
  union    = setunion(local.a, local.b)
  inter    = setintersection(local.a, local.b)
  diff     = setsubtract(local.a, local.b)
  sliced   = slice(local.a, 1, 3)
  sorted   = sort(local.a)
  reversed = reverse(local.a)
  second   = element(local.a, 1)
  where    = index(local.a, "z")
  has      = contains(local.a, "w")
  steps    = range(0, 10, 3)
  chunks   = chunklist(local.a, 3)
  first    = coalesce("", "fallback")
  lists    = coalescelist([], ["non-empty"])
  compact  = compact(["a", "", "b"])
  splat    = [for p in [{ n = "p" }, { n = "q" }] : p.n]
  byname   = { for i, v in local.a : v => i... }
}

stage "command" "collections" {
  for_each = toset([for g in local.grid : join("-", g)])
  run = ["echo", each.key, jsonencode({
    a        = local.a
    b        = local.b
    m        = local.m
    n        = local.n
    flat     = local.flat
    uniq     = local.uniq
    cat      = local.cat
    ks       = local.ks
    vs       = local.vs
    lr       = local.lr
    wd       = local.wd
    merged   = local.merged
    zipped   = local.zipped
    grid     = local.grid
    union    = local.union
    inter    = local.inter
    diff     = local.diff
    sliced   = local.sliced
    sorted   = local.sorted
    reversed = local.reversed
    second   = local.second
    where    = local.where
    has      = local.has
    steps    = local.steps
    chunks   = local.chunks
    first    = local.first
    lists    = local.lists
    compact  = local.compact
    splat    = local.splat
    byname   = local.byname
  })]
}
