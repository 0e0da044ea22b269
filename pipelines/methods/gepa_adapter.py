#!/usr/bin/env python3
"""GEPA (https://github.com/gepa-ai/gepa, the `gepa` package) as an optimizer
method of cairn's optimize kind, written from docs/rollout-protocol.md alone.

GEPA evolves the seed bundle's system prompt (system.txt) by reflective
mutation. Every rollout it asks for, on a training item, goes to cairn's
rollout service ($CAIRN_ROLLOUT_SOCKET) through the documented client
(cairn_rollout.py): cairn runs it with the stage's worker, charges it
against the budget and answers. GEPA never talks to the task model itself.
Its reflection model is $REFLECTION_MODEL_ID at $REFLECTION_MODEL_BASE_URL,
asked through a plain function (an OpenAI-compatible chat completion), so
GEPA needs neither litellm nor the network beyond that URL.

The budget is cairn's: GEPA is given no metric-call limit of its own; it
stops once cairn refuses a request with the typed error budget_exhausted
(nothing of a refused request is run or charged) or nothing is left. The
incumbent is GEPA's best candidate on its validation items (a part of the
training split: the validation split is cairn's, evaluated after the
optimization); when that is the seed prompt, the method proposes nothing.

Usage (the optimize stage's run; the working directory is the workspace):
  PYTHON gepa_adapter.py --seed N [--val-items N] [--minibatch N]
"""

import argparse, hashlib, importlib.metadata, json, os, sys, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
# The rollout service's client, as docs/rollout-protocol.md gives it.
sys.path.insert(0, os.path.join(HERE, "..", "..", "testdata", "optimizer", "methods"))
from cairn_rollout import BudgetExhausted, RolloutError, Rollouts  # noqa: E402

import gepa  # noqa: E402
from gepa.core.adapter import EvaluationBatch  # noqa: E402

COMPONENT = "system_prompt"  # the one text GEPA evolves: the bundle's system.txt


def log(msg):
    print("gepa-adapter: " + msg, file=sys.stderr, flush=True)


class CairnAdapter:
    """GEPA's adapter: a candidate is a bundle folder, a rollout a request
    to cairn's rollout service."""

    # GEPA proposes new texts with its own reflection prompt (GEPA reads
    # this attribute; None keeps its default proposer).
    propose_new_texts = None

    def __init__(self, client, opt_dir):
        self.client = client
        self.opt_dir = opt_dir
        self.refused = 0  # rollouts asked for past the budget (refused whole)
        self.exhausted = False
        self.error = None
        self.bundles = {}

    def bundle(self, candidate):
        """The candidate's bundle folder, named by its content."""
        text = candidate[COMPONENT]
        name = hashlib.sha256(text.encode()).hexdigest()[:16]
        d = os.path.join(self.opt_dir, "candidates", name)
        if not os.path.isdir(d):
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "system.txt"), "w", encoding="utf-8") as f:
                f.write(text if text.endswith("\n") else text + "\n")
        self.bundles[name] = d
        return d

    def evaluate(self, batch, candidate, capture_traces=False):
        ids = list(dict.fromkeys(item["id"] for item in batch))  # an item once per request
        try:
            results = self.client.rollout(self.bundle(candidate), ids)
        except BudgetExhausted as e:
            # Typed: nothing was run or charged. GEPA abandons the
            # iteration, and the stopper ends the search.
            self.exhausted = True
            self.refused += len(ids)
            log(f"budget exhausted: {e}")
            raise
        except RolloutError as e:
            self.error = e
            raise
        by_id = {r["item"]: r for r in results}
        outputs, scores, traces = [], [], []
        for item in batch:
            r = by_id[item["id"]]
            # An infrastructure failure is not charged and has no score:
            # GEPA sees it as a failed example (0), as its adapters do.
            score = float(r["score"]) if r.get("score") is not None else 0.0
            answer = (r.get("outputs") or {}).get("answer", "")
            outputs.append({"item": item["id"], "answer": answer, "key": r.get("key")})
            scores.append(score)
            if capture_traces:
                traces.append({"question": item.get("question", ""), "answer": answer, "expected": item.get("answer"),
                               "score": score, "infra_failure": bool(r.get("infra_failure"))})
        return EvaluationBatch(outputs=outputs, scores=scores, trajectories=traces if capture_traces else None)

    def make_reflective_dataset(self, candidate, eval_batch, components_to_update):
        records = []
        for t in eval_batch.trajectories:
            if t["infra_failure"]:
                feedback = "The task model could not be reached for this input; ignore it."
            elif t["score"] >= 1:
                feedback = f"Correct: the answer is {t['expected']}."
            else:
                feedback = f"Wrong: the correct answer is {t['expected']}."
            records.append({"Inputs": t["question"], "Generated Outputs": t["answer"], "Feedback": feedback})
        return {c: records for c in components_to_update}


class ReflectionLM:
    """The reflection model as GEPA's LanguageModel: prompt (a string or
    chat messages) in, text out, through its OpenAI-compatible endpoint.
    A failure is kept: GEPA would log it and go on, and the method ends
    with it instead (the stopper stops the search)."""

    def __init__(self, base_url, model):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.error = None
        self.calls = 0

    def __call__(self, prompt):
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
        body = json.dumps({"model": self.model, "messages": messages, "temperature": 0}).encode()
        req = urllib.request.Request(self.url, data=body, headers={"Content-Type": "application/json"})
        self.calls += 1
        try:
            with urllib.request.urlopen(req, timeout=600) as resp:
                return json.load(resp)["choices"][0]["message"]["content"]
        except Exception as e:
            detail = e.read().decode(errors="replace")[:300] if hasattr(e, "read") else ""
            self.error = f"{self.url} (model {self.model}): {e} {detail}".strip()
            raise


class CairnBudgetStopper:
    """Stops GEPA when cairn refused a request or has nothing left."""

    def __init__(self, adapter, reflection):
        self.adapter = adapter
        self.reflection = reflection

    def __call__(self, gepa_state):
        a = self.adapter
        if a.exhausted or a.error is not None or self.reflection.error is not None:
            return True
        return a.client.status()["remaining"] <= 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--method", default="gepa")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--val-items", type=int, default=10, help="training items GEPA tracks its Pareto front on")
    ap.add_argument("--minibatch", type=int, default=3, help="GEPA's reflection minibatch")
    args = ap.parse_args()

    seed_dir = os.environ["CAIRN_SEED_BUNDLE"].split(os.pathsep)[0].rstrip("/")
    opt_dir = os.environ["CAIRN_OPTIMIZATION_DIR"]
    with open(os.path.join(seed_dir, "system.txt"), encoding="utf-8") as f:
        seed_prompt = f.read().rstrip("\n")
    with open(os.environ["CAIRN_TRAIN_ITEMS"], encoding="utf-8") as f:
        items = [json.loads(line) for line in f if line.strip()]
    if len(items) <= args.val_items:
        sys.exit(f"gepa-adapter: {len(items)} training items; --val-items {args.val_items} leaves none to train on")
    valset, trainset = items[: args.val_items], items[args.val_items:]

    client = Rollouts()
    adapter = CairnAdapter(client, opt_dir)
    reflection = {"id": os.environ["REFLECTION_MODEL_ID"], "base_url": os.environ["REFLECTION_MODEL_BASE_URL"]}
    record = {"method": args.method, "seed": args.seed, "gepa_version": importlib.metadata.version("gepa"),
              "reflection_model": reflection, "val_items": [i["id"] for i in valset]}
    lm = ReflectionLM(reflection["base_url"], reflection["id"])
    result = None
    try:
        result = gepa.optimize(
            seed_candidate={COMPONENT: seed_prompt},
            trainset=trainset,
            valset=valset,
            adapter=adapter,
            reflection_lm=lm,
            reflection_minibatch_size=args.minibatch,
            stop_callbacks=[CairnBudgetStopper(adapter, lm)],
            # A refused request ends its iteration, not the run: the
            # stopper then ends the search with what GEPA has.
            raise_on_exception=False,
            cache_evaluation=True,
            run_dir=os.path.join(opt_dir, "gepa"),
            seed=args.seed,
        )
    except BudgetExhausted:
        log("the budget does not cover the seed prompt's first evaluation: proposing nothing")
    if adapter.error is not None:
        sys.exit(f"gepa-adapter: the rollout service refused a request: {adapter.error}")
    if lm.error is not None:
        sys.exit(f"gepa-adapter: the reflection model failed: {lm.error}")
    record["reflection_calls"] = lm.calls

    best = None
    if result is not None:
        record["candidates"] = [{"system_prompt": c[COMPONENT], "val_mean": s}
                                for c, s in zip(result.candidates, result.val_aggregate_scores)]
        record["best_idx"] = result.best_idx
        if result.best_idx != 0:
            best = result.best_candidate
    record["budget_exhausted"] = adapter.exhausted
    record["refused_rollouts"] = adapter.refused
    record["counts"] = client.status()
    record["incumbent"] = best[COMPONENT] if best else None
    if best:
        d = adapter.bundle(best)
        with open(os.path.join(d, "system.txt"), encoding="utf-8") as src, \
                open(os.path.join(os.environ["CAIRN_INCUMBENT_DIR"], "system.txt"), "w", encoding="utf-8") as dst:
            dst.write(src.read())
        log(f"proposing candidate {result.best_idx} (validation mean {result.val_aggregate_scores[result.best_idx]:.3f})")
    else:
        log("proposing nothing: no candidate beat the seed prompt")
    with open(os.path.join(opt_dir, "optimizer_result.json"), "w", encoding="utf-8") as f:
        json.dump(record, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
