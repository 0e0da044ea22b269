#!/usr/bin/env python3
"""A SIMULATED optimizer method, standing in for GEPA, MIPRO, MAPRO... in tests
and demos. It searches nothing real: its candidates are the seed prompt with a
"[simulated wrong rate R]" tag, which the simulated task model (cmd/cairn-sim-model)
obeys, so that a search has something to find.

It talks to cairn's rollout service with the documented client (cairn_rollout.py,
docs/rollout-protocol.md): it charges rollouts of the seed bundle before it
proposes anything (--warmup), then scores candidates on batches of training items
until the budget is spent, and leaves the best one in $CAIRN_INCUMBENT_DIR.

Usage: sim_method.py --method NAME --seed N [--mode MODE] [--warmup N] [--batch N]

Modes:
  search     (default) the search above; the incumbent is the best candidate
  none       charge the warm-up rollouts, then propose nothing
  worse      propose a candidate that is worse than the seed bundle
  overspend  ask for 700 rollouts whatever the budget, then propose the best
  crash      charge the warm-up rollouts, then exit with status 3
"""

import argparse, json, os, random, shutil, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cairn_rollout import BudgetExhausted, Rollouts  # noqa: E402


def log(msg):
    print("sim-method: " + msg, file=sys.stderr, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--method", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--mode", default="search", choices=["search", "none", "worse", "overspend", "crash"])
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--batch", type=int, default=20)
    args = ap.parse_args()

    seed_dir = os.environ["CAIRN_SEED_BUNDLE"].split(os.pathsep)[0].rstrip("/")
    opt_dir = os.environ["CAIRN_OPTIMIZATION_DIR"]
    with open(os.path.join(seed_dir, "system.txt"), encoding="utf-8") as f:
        seed_prompt = f.read().rstrip("\n")
    with open(os.environ["CAIRN_TRAIN_ITEMS"], encoding="utf-8") as f:
        train = [json.loads(line)["id"] for line in f if line.strip()]
    client = Rollouts()
    rnd = random.Random(f"{args.method}/{args.seed}")
    # A real method reflects with the reflection model; this one only
    # records where it was told to find it.
    reflection = {"id": os.environ.get("REFLECTION_MODEL_ID"), "base_url": os.environ.get("REFLECTION_MODEL_BASE_URL")}
    record = {"method": args.method, "seed": args.seed, "mode": args.mode, "simulated": True,
              "reflection_model": reflection, "candidates": []}
    cursor = [0]

    def batch(n):
        ids = [train[(cursor[0] + i) % len(train)] for i in range(min(n, len(train)))]
        cursor[0] += n
        return ids

    def score(bundle, n):
        results = client.rollout(bundle, batch(n))
        scored = [r["score"] for r in results if r["charged"] and r["score"] is not None]
        return sum(scored) / len(scored) if scored else 0.0

    def candidate(name, rate):
        d = os.path.join(opt_dir, "candidates", name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "system.txt"), "w", encoding="utf-8") as f:
            f.write(f"{seed_prompt}\n{name} of {args.method}/{args.seed}. [simulated wrong rate {rate}]\n")
        return d

    exhausted = False
    left = args.warmup
    while left > 0:  # methods charge rollouts before they propose anything
        score(seed_dir, min(left, args.batch))
        left -= args.batch
    log(f"warm-up done: {client.status()['charged']} rollouts charged")
    if args.mode == "crash":
        log("crashing on purpose (--mode crash)")
        sys.exit(3)

    best = None
    if args.mode == "worse":
        d = candidate("worse", 0.6)
        best = {"name": "worse", "dir": d, "train_mean": score(d, args.batch)}
        record["candidates"].append({k: best[k] for k in ("name", "train_mean")})
    elif args.mode in ("search", "overspend"):
        asked = client.status()["charged"]
        k = 0
        while True:
            n = args.batch
            if args.mode == "search":
                remaining = client.status()["remaining"]
                n = min(n, remaining)
                if n <= 0:
                    break
            elif asked >= 700:
                break
            name = f"c{k:02d}"
            d = candidate(name, rnd.choice([0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4]))
            try:
                asked += n
                mean = score(d, n)
            except BudgetExhausted as e:
                log(f"budget exhausted: {e}")
                exhausted = True
                if args.mode == "overspend":
                    continue  # keep asking: every request past the budget is refused
                break
            record["candidates"].append({"name": name, "train_mean": mean})
            if best is None or mean > best["train_mean"]:
                best = {"name": name, "dir": d, "train_mean": mean}
            k += 1
    record["budget_exhausted"] = exhausted
    record["counts"] = client.status()
    record["incumbent"] = best["name"] if best else None
    if best:
        shutil.copy(os.path.join(best["dir"], "system.txt"), os.path.join(os.environ["CAIRN_INCUMBENT_DIR"], "system.txt"))
        log(f"proposing {best['name']} (train mean {best['train_mean']:.3f})")
    else:
        log("proposing nothing")
    with open(os.path.join(opt_dir, "optimizer_result.json"), "w", encoding="utf-8") as f:
        json.dump(record, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
