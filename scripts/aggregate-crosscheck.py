#!/usr/bin/python3
"""Reference values for cairn's aggregation (stages/aggregate), from the
libraries researchers use: statsmodels' Holm correction, scipy's paired
percentile bootstrap, and a short numpy implementation of the stratified
bootstrap of docs/aggregate.md.

    /usr/bin/python3 scripts/aggregate-crosscheck.py CASES.json > REFERENCE.json

CASES.json (written by the Go test TestCrossCheck in stages/aggregate):
    {"holm": [[p, ...], ...],
     "rows": [{"strata": [{"baseline": [...], "deployed": [...]}, ...],
               "replicates": B, "seed": S}, ...]}
REFERENCE.json:
    {"holm": [{"p_adj": [...], "reject": [...]}, ...],
     "rows": [{"ci_low", "ci_high", "p", "sd",
               "scipy_ci_low", "scipy_ci_high", "scipy_sd"}, ...]}
Interval bounds and sd are percentage points; the scipy fields are there for
one-seed rows only.
"""

import inspect
import json
import sys

import numpy as np
from scipy import stats
from statsmodels.stats.multitest import multipletests

ALPHA = 0.05


def stratified(strata, replicates, rng):
    """D*: per replicate, each seed's items resampled with replacement, the
    seed's mean paired difference, averaged over the seeds."""
    total = np.zeros(replicates)
    for s in strata:
        d = np.asarray(s["deployed"], float) - np.asarray(s["baseline"], float)
        n = len(d)
        chunk = max(1, 4_000_000 // n)
        means = np.empty(replicates)
        for start in range(0, replicates, chunk):
            m = min(chunk, replicates - start)
            means[start:start + m] = d[rng.integers(0, n, size=(m, n))].mean(axis=1)
        total += means
    dstar = total / len(strata)
    pp = 100 * dstar
    low, high = np.percentile(pp, [2.5, 97.5])  # method="linear", numpy's default
    b = len(dstar)
    le = int(np.sum(dstar <= 0))
    ge = int(np.sum(dstar >= 0))
    p = min(1.0, 2 * min((1 + le) / (b + 1), (1 + ge) / (b + 1)))
    return {"ci_low": float(low), "ci_high": float(high), "p": p, "sd": float(pp.std())}


def scipy_paired(stratum, replicates, rng):
    base = np.asarray(stratum["baseline"], float)
    dep = np.asarray(stratum["deployed"], float)
    kw = {"rng": rng} if "rng" in inspect.signature(stats.bootstrap).parameters else {"random_state": rng}
    res = stats.bootstrap(
        (dep, base),
        lambda x, y, axis=-1: np.mean(x - y, axis=axis),
        paired=True, vectorized=True, n_resamples=replicates,
        method="percentile", confidence_level=0.95, **kw)
    return {"scipy_ci_low": 100 * float(res.confidence_interval.low),
            "scipy_ci_high": 100 * float(res.confidence_interval.high),
            "scipy_sd": 100 * float(res.standard_error)}


def main():
    with open(sys.argv[1]) as f:
        cases = json.load(f)
    out = {"holm": [], "rows": []}
    for p in cases["holm"]:
        reject, adj, _, _ = multipletests(p, alpha=ALPHA, method="holm")
        out["holm"].append({"p_adj": [float(x) for x in adj], "reject": [bool(x) for x in reject]})
    for row in cases["rows"]:
        rng = np.random.default_rng(row["seed"])
        ref = stratified(row["strata"], row["replicates"], rng)
        if len(row["strata"]) == 1:
            ref.update(scipy_paired(row["strata"][0], row["replicates"], rng))
        out["rows"].append(ref)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
