#!/usr/bin/python3
"""Reference values for cairn's aggregation (stages/aggregate), from the
libraries researchers use: statsmodels' Holm correction, scipy's paired
percentile bootstrap, a short numpy implementation of the bootstrap of
docs/aggregate.md (both resampling schemes: "within-seed", each seed's
items drawn on their own, and "shared-items", one draw of item indices used
for every seed), and, for bit-for-bit comparison, the documented random
stream itself (xoshiro256++ seeded by sha256, Lemire's indices, the four
accumulators) written plainly from the document.

    /usr/bin/python3 scripts/aggregate-crosscheck.py CASES.json > REFERENCE.json

CASES.json (written by the Go test TestCrossCheck in stages/aggregate):
    {"holm": [[p, ...], ...],
     "rows": [{"strata": [{"baseline": [...], "deployed": [...]}, ...],
               "replicates": B, "seed": S, "resample": SCHEME}, ...],
     "exact": [{"method": M, "cell_id": C, "seeds": [0, 1, 2],
                "strata": [...], "replicates": B, "resample": SCHEME}, ...]}
REFERENCE.json:
    {"holm": [{"p_adj": [...], "reject": [...]}, ...],
     "rows": [{"ci_low", "ci_high", "p", "sd",
               "scipy_ci_low", "scipy_ci_high", "scipy_sd"}, ...],
     "exact": [{"ci_low", "ci_high", "p"}, ...]}
Interval bounds and sd are percentage points. The scipy fields are there for
one-seed rows and for rows of shared items (scipy's paired bootstrap draws
the same indices for every sample: the seeds' differences). "exact" are the
documented stream's figures, which cairn must give to the bit.
"""

import hashlib
import inspect
import json
import struct
import sys

import numpy as np
from scipy import stats
from statsmodels.stats.multitest import multipletests

ALPHA = 0.05
STREAM_CONSTANT = b"cairn.aggregate.bootstrap/1"
MASK64 = (1 << 64) - 1
MASK32 = (1 << 32) - 1


def diffs(stratum):
    return np.asarray(stratum["deployed"], float) - np.asarray(stratum["baseline"], float)


def bootstrap(strata, replicates, rng, resample):
    """D*: per replicate, the seed's mean paired difference of items drawn
    with replacement, averaged over the seeds; within-seed, each seed draws
    its own items, shared-items, one draw of indices serves every seed."""
    ds = [diffs(s) for s in strata]
    n = len(ds[0])
    total = np.zeros(replicates)
    chunk = max(1, 4_000_000 // n)
    if resample == "within-seed":
        for d in ds:
            n = len(d)
            chunk = max(1, 4_000_000 // n)
            means = np.empty(replicates)
            for start in range(0, replicates, chunk):
                m = min(chunk, replicates - start)
                means[start:start + m] = d[rng.integers(0, n, size=(m, n))].mean(axis=1)
            total += means
    elif resample == "shared-items":
        for start in range(0, replicates, chunk):
            m = min(chunk, replicates - start)
            idx = rng.integers(0, n, size=(m, n))
            for d in ds:
                total[start:start + m] += d[idx].mean(axis=1)
    else:
        raise ValueError("unknown resampling %r" % resample)
    return total / len(strata)


def noise(ds):
    """The rounding bound of a row's replicates (docs/aggregate.md): (n + S)
    x 2^-50 x the largest |difference|, n the most items of a seed, S the
    seeds; a replicate within it of 0 is 0."""
    n = max(len(d) for d in ds)
    m = max(float(np.max(np.abs(np.asarray(d, float)))) for d in ds)
    return (n + len(ds)) * 2.0 ** -50 * m


def summary(dstar, tol):
    """The percentile interval of 100·D* and the two-sided p-value, D*
    within tol of 0 taken as 0."""
    dstar = np.where(np.abs(dstar) <= tol, 0.0, dstar)
    pp = 100 * dstar
    low, high = np.percentile(pp, [2.5, 97.5])  # method="linear", numpy's default
    b = len(dstar)
    le = int(np.sum(dstar <= 0))
    ge = int(np.sum(dstar >= 0))
    p = min(1.0, 2 * min((1 + le) / (b + 1), (1 + ge) / (b + 1)))
    return {"ci_low": float(low), "ci_high": float(high), "p": p, "sd": float(pp.std())}


def scipy_paired(strata, replicates, rng):
    """scipy's paired percentile bootstrap of the mean over seeds of each
    seed's mean difference: paired, it draws the same item indices for
    every seed (one seed: the classic paired bootstrap)."""
    samples = tuple(diffs(s) for s in strata)
    kw = {"rng": rng} if "rng" in inspect.signature(stats.bootstrap).parameters else {"random_state": rng}
    res = stats.bootstrap(
        samples,
        lambda *xs, axis=-1: np.mean([np.mean(x, axis=axis) for x in xs], axis=0),
        paired=True, vectorized=True, n_resamples=replicates,
        method="percentile", confidence_level=0.95, **kw)
    return {"scipy_ci_low": 100 * float(res.confidence_interval.low),
            "scipy_ci_high": 100 * float(res.confidence_interval.high),
            "scipy_sd": 100 * float(res.standard_error)}


class Xoshiro:
    """xoshiro256++ 1.0, its state the four big-endian 64-bit words of
    sha256(StreamConstant NUL method NUL cell_id NUL name)."""

    def __init__(self, method, cell_id, name):
        digest = hashlib.sha256(b"\0".join([STREAM_CONSTANT, method.encode(), cell_id.encode(), name.encode()])).digest()
        self.s = list(struct.unpack(">4Q", digest))
        if not any(self.s):
            self.s[3] = 1

    def next(self):
        s = self.s
        out = (rotl(s[0] + s[3], 23) + s[0]) & MASK64
        t = (s[1] << 17) & MASK64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return out


def rotl(x, k):
    x &= MASK64
    return ((x << k) | (x >> (64 - k))) & MASK64


def stream_means(rng, d, replicates):
    """The documented draws of one stream: per replicate, n indices by
    Lemire's multiply-shift from 32-bit words (high half first), each output
    starting a replicate afresh, the draws summed in four accumulators."""
    n = len(d)
    skip = (1 << 32) % n
    means = []
    for _ in range(replicates):
        acc = [0.0, 0.0, 0.0, 0.0]
        drawn = 0
        output = 0
        while drawn < n:
            x = rng.next()
            for half, w in enumerate((x >> 32, x & MASK32)):
                if drawn == n:
                    break
                m = w * n
                if m & MASK32 < skip:
                    continue
                acc[2 * (output % 2) + half] += float(d[m >> 32])
                drawn += 1
            output += 1
        means.append(((acc[0] + acc[1]) + (acc[2] + acc[3])) / n)
    return means


def exact(case):
    """The documented bootstrap of one row, to the bit."""
    ds = [[float(x) for x in diffs(s)] for s in case["strata"]]
    b = case["replicates"]
    if case["resample"] == "within-seed":
        units = [stream_means(Xoshiro(case["method"], case["cell_id"], str(seed)), d, b)
                 for seed, d in zip(case["seeds"], ds)]
    else:
        # Each item's differences summed in seed order from 0, over the seeds.
        item = []
        for i in range(len(ds[0])):
            s = 0.0
            for d in ds:
                s += d[i]
            item.append(s / len(ds))
        units = [stream_means(Xoshiro(case["method"], case["cell_id"], "shared-items"), item, b)]
    dstar = []
    for r in range(b):
        s = 0.0
        for u in units:
            s += u[r]
        dstar.append(s / len(units))
    out = summary(np.asarray(dstar), noise(ds))
    del out["sd"]
    return out


def main():
    with open(sys.argv[1]) as f:
        cases = json.load(f)
    out = {"holm": [], "rows": [], "exact": []}
    for p in cases["holm"]:
        reject, adj, _, _ = multipletests(p, alpha=ALPHA, method="holm")
        out["holm"].append({"p_adj": [float(x) for x in adj], "reject": [bool(x) for x in reject]})
    for row in cases["rows"]:
        rng = np.random.default_rng(row["seed"])
        resample = row.get("resample", "within-seed")
        ref = summary(bootstrap(row["strata"], row["replicates"], rng, resample), noise([diffs(s) for s in row["strata"]]))
        if len(row["strata"]) == 1 or resample == "shared-items":
            ref.update(scipy_paired(row["strata"], row["replicates"], rng))
        out["rows"].append(ref)
    for case in cases.get("exact", []):
        out["exact"].append(exact(case))
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
