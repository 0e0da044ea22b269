#!/usr/bin/env python3
"""bench/evalpace.py — evaluations at the pace of the server (#34).

    evalpace.py CAIRN EVALPACE SIM OUT_DIR [BASE_CAIRN]

On the SIMULATED model (cmd/cairn-sim-model: a fixed latency per request,
no limit on concurrency, so the server-bound ideal of N items at C in
flight is ceil(N/C) x latency), times side by side, in turns
(bench/interleave.py's way: a run of each command per round, the order
rotating):

- `cairn apply` of one evaluate stage (a fresh cache each run) with the
  README's example worker (docs/worker-protocol.md, Python) and with a
  worker in Go (bench/evalpace worker), at 64, 256 and 1,024 in flight,
  against the minimal client (bench/evalpace client: the same requests at
  the same concurrency, no cairn) on the same server, and against each
  worker alone, without cairn, reading the requests cairn would write
  from a file (the pace the worker itself allows);
- an optimize stage's rollout service: a method (bench/evalpace method)
  asking for rollouts of 256 items at 256 in flight; rollouts/s from the
  method's first request to its last reply, against 256 / latency and
  against the minimal client sending the same requests in batches of 256,
  each once the last batch's replies are all in (what a method that waits
  for each reply allows: a batch ends with its slowest reply);
- the cold start of a 50,000-item evaluation with 49,000 results in the
  store: the time from the apply's start to the first request the server
  receives.

For each evaluate row it also says where the time goes, from the server's
request log: to the first request, from the first request to the last
beyond the latency of the waves between them, and after the last reply.

BASE_CAIRN, when given, is another cairn binary timed in the same rounds
(the figures before a change). Writes OUT_DIR/evalpace.md and prints it.

Environment: BENCH_EVALPACE_ROUNDS (3), BENCH_EVALPACE_ROWS (all:
64,256,1024,rollout,cold), BENCH_EVALPACE_PYTHON=0 skips the Python worker.
"""
import datetime
import json
import math
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time

CAIRN, EVALPACE, SIM, OUT = sys.argv[1:5]
BASE = sys.argv[5] if len(sys.argv) > 5 else ""
ROUNDS = int(os.environ.get("BENCH_EVALPACE_ROUNDS", "3"))
ROWS = os.environ.get("BENCH_EVALPACE_ROWS", "64,256,1024,rollout,cold").split(",")
PYTHON = os.environ.get("BENCH_EVALPACE_PYTHON", "1") != "0"
# The README worker runs on the interpreter running this script, named by
# its path: "python3" on PATH may be a version manager's shell script (a
# pyenv shim took 60-90 ms to start one here), a cost of the machine's
# setup, not of cairn or of the worker.
PYTHON_EXE = sys.executable
MODEL = "sim-model"
# in flight -> (items, latency in seconds)
SHAPES = {64: (2000, 0.05), 256: (5000, 0.2), 1024: (8192, 0.5)}
TARGET = 0.95


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def readme_worker():
    doc = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "worker-protocol.md")).read()
    sec = doc[doc.index("## A complete worker"):]
    return re.search(r"```python\n(.*?)```", sec, re.S).group(1)


def received(line):
    """The time (Unix seconds) a request log line says its request came."""
    return datetime.datetime.fromisoformat(json.loads(line)["time"].replace("Z", "+00:00")).timestamp()


class Sim:
    """A simulated model with a request log."""

    def __init__(self, work, latency):
        self.latency = latency
        self.log = os.path.join(work, "requests-%g.jsonl" % latency)
        open(self.log, "w").close()
        self.p = subprocess.Popen([SIM, "--model", MODEL, "--latency", "%gms" % (latency * 1000), "--request-log", self.log],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.url = self.p.stdout.readline().strip()

    def mark(self):
        return os.path.getsize(self.log)

    def first_after(self, mark):
        with open(self.log) as f:
            f.seek(mark)
            line = f.readline()
        return received(line)

    def received_after(self, mark):
        """When the server received each request logged after mark, in order."""
        with open(self.log) as f:
            f.seek(mark)
            return sorted(received(line) for line in f if line.strip())

    def stop(self):
        self.p.terminate()
        self.p.wait()


def evaluate_pipeline(url, inflight, items="data/items.jsonl"):
    return f'''pipeline "evalpace" {{}}
variable "w" {{ type = list(string) }}
stage "evaluate" "e" {{
  worker        = var.w
  items         = "{items}"
  model         = "{MODEL}"
  endpoints     = ["{url}"]
  max_in_flight = {inflight}
  scores        = "out/scores.jsonl"
}}
'''


def run(cmd, cwd, env=None):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    t = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit("evalpace: %s exited %d: %s" % (" ".join(cmd), p.returncode, p.stderr[-2000:]))
    return t


def children_cpu():
    """User + system CPU seconds of the children waited for so far (a
    cairn's own and its workers', which it waits for)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


# name -> median CPU seconds (user + system) of the last rounds()' commands.
CPU = {}


def rounds(cmds):
    """cmds: name -> function returning seconds; runs them in turns. Also
    sets CPU: each command's median CPU time."""
    times = {n: [] for n in cmds}
    cpus = {n: [] for n in cmds}
    names = list(cmds)
    for r in range(ROUNDS):
        k = r % len(names)
        for n in names[k:] + names[:k]:
            c0 = children_cpu()
            times[n].append(cmds[n]())
            cpus[n].append(children_cpu() - c0)
        log("  round %d/%d done" % (r + 1, ROUNDS))
    CPU.update({n: statistics.median(c) for n, c in cpus.items()})
    return {n: statistics.median(t) for n, t in times.items()}


def cairns():
    out = [("cairn", CAIRN)]
    if BASE:
        out.append(("cairn (before)", BASE))
    return out


def eval_row(work, inflight, rows, checks):
    n, lat = SHAPES[inflight]
    d = os.path.join(work, "c%d" % inflight)
    os.makedirs(os.path.join(d, "data"), exist_ok=True)
    with open(os.path.join(d, "data", "items.jsonl"), "w") as f:
        subprocess.run([EVALPACE, "items", "-n", str(n)], stdout=f, check=True)
    with open(os.path.join(d, "worker.py"), "w") as f:
        f.write(readme_worker())
    sim = Sim(work, lat)
    with open(os.path.join(d, "pipe.hcl"), "w") as f:
        f.write(evaluate_pipeline(sim.url, inflight))
    workers = [("Go worker", [EVALPACE, "worker"])]
    if PYTHON:
        workers.append(("README worker (Python)", [PYTHON_EXE, "worker.py"]))
    # The requests cairn would write, for each worker alone.
    requests = os.path.join(d, "requests.jsonl")
    with open(os.path.join(d, "data", "items.jsonl")) as f, open(requests, "w") as out:
        for i, line in enumerate(f):
            out.write(json.dumps({"id": "i%d" % i, "key": "k%d" % i, "attempt": 1, "endpoint": sim.url,
                                  "model": MODEL, "runtime": {}, "item": json.loads(line)}) + "\n")

    def apply(binary, w):
        def go():
            shutil.rmtree(os.path.join(d, "cache"), ignore_errors=True)
            shutil.rmtree(os.path.join(d, "out"), ignore_errors=True)
            return run([binary, "apply", "pipe.hcl", "--cache", "cache", "--var", "w=" + json.dumps(w)], d)
        return go

    def alone(argv):
        """The worker without cairn, its requests read from a file at
        once: the pace the worker itself allows."""
        def go():
            env = dict(os.environ, CAIRN_MAX_IN_FLIGHT=str(inflight), MODEL_ID=MODEL)
            with open(requests) as f:
                t0 = time.perf_counter()
                p = subprocess.run(argv, cwd=d, env=env, stdin=f, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
                t = time.perf_counter() - t0
            answered = sum(1 for line in p.stdout.splitlines() if b'"score"' in line)
            if p.returncode != 0 or answered != n:
                sys.exit("evalpace: %s exited %d with %d of %d items scored" % (" ".join(argv), p.returncode, answered, n))
            return t
        return go

    cmds = {"minimal client": lambda: float(subprocess.run(
        [EVALPACE, "client", "-endpoint", sim.url, "-model", MODEL, "-n", str(n), "-c", str(inflight)],
        capture_output=True, text=True, check=True).stdout)}
    for wname, w in workers:
        cmds["%s alone, requests from a file" % wname] = alone(w)
        for cname, binary in cairns():
            cmds["%s, %s" % (cname, wname)] = apply(binary, w)
    log("evaluate: %d items, %d in flight, %g ms" % (n, inflight, lat * 1000))
    ideal = math.ceil(n / inflight) * lat
    seen = {name: [] for name in cmds}
    med = rounds({name: phased(sim, fn, ideal - lat, seen[name]) for name, fn in cmds.items()})
    sim.stop()
    for name, runs in seen.items():
        PHASES.append((f"{n} items, {inflight} in flight, {lat * 1000:g} ms: {name}",) +
                      tuple(statistics.median(r[i] for r in runs) for i in range(3)))
    for name, t in med.items():
        rows.append((f"{n} items, {inflight} in flight, {lat * 1000:g} ms: {name}", t, ideal, med["minimal client"], CPU[name]))
        if name.startswith("cairn,"):
            worker = med["%s alone, requests from a file" % name[7:]]
            checks.append((f"evaluate {inflight} in flight, {name[7:]}: >= 95% of the server-bound rate",
                           ideal / t >= TARGET, "%.0f%% (%.2f s vs %.2f s ideal; minimal client %.0f%%, the worker alone %.0f%%)" % (
                               100 * ideal / t, t, ideal, 100 * ideal / med["minimal client"], 100 * ideal / worker)))


# Where each evaluate row's time goes, from the server's request log:
# (row, to the first request, first to last request beyond the waves'
# latency, after the last reply), medians in seconds.
PHASES = []


def phased(sim, fn, waves, out):
    """fn, timed by the server's request log too: appends to out the time
    from the command's start to the first request the server received,
    from the first request to the last beyond waves (the latency of the
    waves between them, what the server takes), and from the last reply
    (the last request plus the latency) to the command's end."""
    def go():
        mark = sim.mark()
        t = fn()
        t1 = time.time()
        # The command's start is its end less the time fn measured: what
        # fn does before the command (a cairn row removes the last run's
        # cache and out folder) is not the command's.
        t0 = t1 - t
        got = sim.received_after(mark)
        out.append((got[0] - t0, got[-1] - got[0] - waves, t1 - got[-1] - sim.latency))
        return t
    return go


def rollout_row(work, rows, checks):
    n, inflight, batch, lat = 2048, 256, 256, 0.2
    d = os.path.join(work, "rollout")
    os.makedirs(os.path.join(d, "data"), exist_ok=True)
    os.makedirs(os.path.join(d, "bundles", "seed"), exist_ok=True)
    with open(os.path.join(d, "bundles", "seed", "system.txt"), "w") as f:
        f.write("Answer with a number only.\n")
    with open(os.path.join(d, "data", "train.jsonl"), "w") as f:
        subprocess.run([EVALPACE, "items", "-n", str(n)], stdout=f, check=True)
    sim = Sim(work, lat)
    pipe = f'''pipeline "rollouts" {{}}
stage "optimize" "o" {{
  run               = ["{EVALPACE}", "method", "-n", "{n}", "-batch", "{batch}", "-out", "timing.txt"]
  out               = "runs/o"
  budget            = {n}
  bundle            = ["bundles/seed/"]
  worker            = ["{EVALPACE}", "worker"]
  bundle_in_request = true
  items             = "data/train.jsonl"
  model             = "{MODEL}"
  endpoints         = ["{sim.url}"]
  max_in_flight     = {inflight}
}}
'''
    with open(os.path.join(d, "pipe.hcl"), "w") as f:
        f.write(pipe)

    def apply(binary):
        def go():
            for p in ("cache", "runs", "timing.txt"):
                shutil.rmtree(os.path.join(d, p), ignore_errors=True)
                if os.path.exists(os.path.join(d, p)):
                    os.remove(os.path.join(d, p))
            run([binary, "apply", "pipe.hcl", "--cache", "cache"], d)
            t, charged = open(os.path.join(d, "timing.txt")).read().split()
            if int(charged) != n:
                sys.exit("evalpace: the method was charged %s rollouts of %d" % (charged, n))
            return float(t)
        return go

    log("rollouts: %d in requests of %d, %d in flight, %g ms" % (n, batch, inflight, lat * 1000))
    cmds = {"minimal client, in batches": lambda: float(subprocess.run(
        [EVALPACE, "client", "-endpoint", sim.url, "-model", MODEL, "-n", str(n), "-c", str(inflight), "-batch", str(batch)],
        capture_output=True, text=True, check=True).stdout)}
    cmds.update({name: apply(b) for name, b in cairns()})
    med = rounds(cmds)
    sim.stop()
    ideal = math.ceil(n / inflight) * lat
    client = med["minimal client, in batches"]
    for name, t in med.items():
        what = name if name.startswith("minimal") else name + " (method's time)"
        rows.append((f"optimize, {n} rollouts in requests of {batch}, {inflight} in flight, {lat * 1000:g} ms: {what}", t, ideal, client, CPU[name]))
        if name == "cairn":
            checks.append(("rollout service, 256 in flight: >= 95% of the server-bound rollouts/s", ideal / t >= TARGET,
                           "%.0f rollouts/s vs %.0f (%.0f%%; minimal client in batches %.0f%%)" % (
                               n / t, n / ideal, 100 * ideal / t, 100 * ideal / client)))


def cold_row(work, rows, checks):
    n, stored = 50_000, 49_000
    d = os.path.join(work, "cold")
    os.makedirs(os.path.join(d, "data"), exist_ok=True)
    with open(os.path.join(d, "data", "all.jsonl"), "w") as f:
        subprocess.run([EVALPACE, "items", "-n", str(n)], stdout=f, check=True)
    lines = open(os.path.join(d, "data", "all.jsonl")).read().splitlines(True)
    with open(os.path.join(d, "data", "stored.jsonl"), "w") as f:
        f.writelines(lines[:stored])
    sim = Sim(work, 0)
    with open(os.path.join(d, "fill.hcl"), "w") as f:
        f.write(evaluate_pipeline(sim.url, 256, "data/stored.jsonl"))
    with open(os.path.join(d, "pipe.hcl"), "w") as f:
        f.write(evaluate_pipeline(sim.url, 256, "data/all.jsonl"))
    w = '["%s","worker"]' % EVALPACE
    log("cold start: filling a store with %d results" % stored)
    run([CAIRN, "apply", "fill.hcl", "--cache", "filled", "--var", "w=" + w], d)

    def apply(binary):
        def go():
            shutil.rmtree(os.path.join(d, "cache"), ignore_errors=True)
            shutil.rmtree(os.path.join(d, "out"), ignore_errors=True)
            os.makedirs(os.path.join(d, "cache", "items"))
            shutil.copy(os.path.join(d, "filled", "items", "log"), os.path.join(d, "cache", "items", "log"))
            mark = sim.mark()
            t0 = time.time()
            run([binary, "apply", "pipe.hcl", "--cache", "cache", "--var", "w=" + w], d)
            return sim.first_after(mark) - t0
        return go

    log("cold start: %d items, %d in the store" % (n, stored))
    med = rounds({name: apply(b) for name, b in cairns()})
    sim.stop()
    for name, t in med.items():
        rows.append((f"cold start, {n} items, {stored} in the store: {name}, time to the first request", t, None, None, CPU[name]))
        if name == "cairn":
            checks.append(("cold start 50k items, 49k stored: first request <= 1 s", t <= 1.0, "%.2f s" % t))


def python_start():
    """Median seconds the README worker's interpreter takes to start and
    import what the worker imports, and exit: the least an evaluation with
    it can lose before its first request."""
    imports = "; ".join(l for l in readme_worker().splitlines() if l.startswith("import "))
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        subprocess.run([PYTHON_EXE, "-c", imports], check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    work = os.path.join(OUT, "evalpace-work")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    load = open("/proc/loadavg").read().split()[:3]
    rows, checks = [], []
    for r in ROWS:
        done = len(rows)
        if r in ("64", "256", "1024"):
            eval_row(work, int(r), rows, checks)
        elif r == "rollout":
            rollout_row(work, rows, checks)
        elif r == "cold":
            cold_row(work, rows, checks)
        # Each row's figures as soon as it has them (a long run cut short
        # keeps them).
        for name, t, ideal, client, cpu in rows[done:]:
            log("  %s: %.3f s, CPU %.2f s%s" % (name, t, cpu, " (ideal %.2f s, %.0f%%)" % (ideal, 100 * ideal / t) if ideal else ""))
    end = open("/proc/loadavg").read().split()[:3]
    interpreter = ""
    if PYTHON and any(r in ("64", "256", "1024") for r in ROWS):
        interpreter = " The README worker runs on %s (Python %s), which starts and imports the worker's modules in %.0f ms." % (
            PYTHON_EXE, sys.version.split()[0], 1000 * python_start())
    md = ["", "## Evaluations at the pace of the server (bench/evalpace.py, simulated model)", "",
          "%d rounds in turns; medians. Load average %s at the start, %s at the end, on %d cores. "
          "Ideal: ceil(items / in flight) x latency, what the server allows; the minimal client sends the same requests "
          "at the same concurrency without cairn. CPU: user + system time of the command and the processes it waited for "
          "(cairn's workers), median.%s" % (ROUNDS, " ".join(load), " ".join(end), os.cpu_count(), interpreter), "",
          "| row | median | CPU | ideal | % of ideal | minimal client |", "|---|---:|---:|---:|---:|---:|"]
    for name, t, ideal, client, cpu in rows:
        md.append("| %s | %.3f s | %.2f s | %s | %s | %s |" % (name, t, cpu, "%.2f s" % ideal if ideal else "",
                                                               "%.0f%%" % (100 * ideal / t) if ideal else "",
                                                               "%.3f s" % client if client else ""))
    if PHASES:
        md += ["", "Where the time goes, from the server's request log (medians): from the command's start to the first "
               "request the server received; from the first request to the last, beyond the latency of the waves between "
               "them (what the server allows); from the last reply to the command's end.", "",
               "| row | to the first request | first to last request, beyond the waves | after the last reply |",
               "|---|---:|---:|---:|"]
        for name, first, between, after in PHASES:
            md.append("| %s | %.1f ms | %.1f ms | %.1f ms |" % (name, 1000 * first, 1000 * between, 1000 * after))
    md += ["", "| target | measured | |", "|---|---|---|"]
    for what, ok, measured in checks:
        md.append("| %s | %s | %s |" % (what, measured, "met" if ok else "MISSED"))
    text = "\n".join(md) + "\n"
    with open(os.path.join(OUT, "evalpace.md"), "w") as f:
        f.write(text)
    if os.environ.get("BENCH_KEEP") != "1":
        shutil.rmtree(work, ignore_errors=True)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
