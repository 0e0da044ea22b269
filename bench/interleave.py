#!/usr/bin/env python3
"""bench/interleave.py — times commands side by side, in turns.

    interleave.py OUT.json RUNS WARMUP PREPARE NAME=CMD [NAME=CMD ...]

Each round runs PREPARE (a shell command, untimed) before every command,
then the command (a shell command, its output thrown away), for every
command in turn; the order rotates from round to round. The first WARMUP
rounds are not kept. hyperfine runs all the runs of one command before the
next; on a machine whose speed drifts by tens of percent over a minute (a
shared virtual machine) that puts the drift into the ratios between the
commands. Taking turns spreads it over all of them alike.

OUT.json has hyperfine's shape (results: command, median, mean, min, max,
times), for bench/run.sh's report.
"""
import json
import statistics
import subprocess
import sys
import time


def main():
    out, runs, warmup, prepare = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    cmds = [a.split("=", 1) for a in sys.argv[5:]]
    times = {name: [] for name, _ in cmds}
    for r in range(warmup + runs):
        k = r % len(cmds)
        for name, cmd in cmds[k:] + cmds[:k]:
            subprocess.run(prepare, shell=True, check=True)
            t0 = time.perf_counter()
            p = subprocess.run(cmd, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            t = time.perf_counter() - t0
            if p.returncode != 0:
                sys.exit("interleave: %s exited %d" % (cmd, p.returncode))
            if r >= warmup:
                times[name].append(t)
        print("round %d/%d done" % (r + 1, warmup + runs), file=sys.stderr)
    results = []
    for name, cmd in cmds:
        t = times[name]
        results.append({"command": name, "median": statistics.median(t), "mean": statistics.fmean(t),
                        "min": min(t), "max": max(t), "times": t, "exec": cmd})
        print("  %-32s median %8.1f ms  (min %8.1f, max %8.1f)" % (name, statistics.median(t) * 1e3,
              min(t) * 1e3, max(t) * 1e3), file=sys.stderr)
    json.dump({"results": results, "interleaved": True}, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()
