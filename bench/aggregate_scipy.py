#!/usr/bin/python3
"""The anchor of bench/aggregate.sh: what a researcher would write with scipy
for `cairn aggregate ROOT --bootstrap B`.

    /usr/bin/python3 bench/aggregate_scipy.py ROOT B

Reads every result.json under ROOT and the test.json beside it, groups the
jobs into rows by (method, cell_id), and per row runs scipy.stats.bootstrap
with B resamples (method="percentile", vectorized) on the row's paired
differences (deployed - baseline) of its three seeds pooled: scipy has no
stratified resampling, so this draws as many items per replicate as cairn's
stratified bootstrap does (every seed's items). Prints one line per row:
method, cell, delta_pp, ci_low, ci_high.
"""

import inspect
import json
import os
import sys

import numpy as np
from scipy import stats


def main():
    root, b = sys.argv[1], int(sys.argv[2])
    rows = {}
    for d, _, files in os.walk(root):
        if "result.json" not in files:
            continue
        with open(os.path.join(d, "result.json")) as f:
            r = json.load(f)
        with open(os.path.join(d, "test.json")) as f:
            t = json.load(f)
        items = sorted(t["items"], key=lambda it: it["id"])
        diff = np.array([it["deployed"] - it["baseline"] for it in items])
        rows.setdefault((r["method"], r["cell_id"]), []).append((r["seed"], diff))
    rng = np.random.default_rng(0)
    kw = {"rng": rng} if "rng" in inspect.signature(stats.bootstrap).parameters else {"random_state": rng}
    for (method, cell), seeds in sorted(rows.items()):
        d = np.concatenate([x for _, x in sorted(seeds, key=lambda s: s[0])])
        res = stats.bootstrap((d,), np.mean, n_resamples=b, method="percentile",
                              vectorized=True, confidence_level=0.95, **kw)
        ci = res.confidence_interval
        print("%s\t%s\t%.2f\t%.2f\t%.2f" % (method, cell, 100 * d.mean(), 100 * ci.low, 100 * ci.high))


if __name__ == "__main__":
    main()
