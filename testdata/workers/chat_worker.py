#!/usr/bin/env python3
"""Example cairn evaluation worker: asks an OpenAI-compatible chat endpoint.

This is the shape of a worker for a vLLM task model (see
docs/worker-protocol.md). cairn writes one JSON request per line on stdin:

    {"id": "q17", "key": "...", "attempt": 1,
     "endpoint": "http://127.0.0.1:8000/v1", "model": "Qwen/...",
     "item": {"question": "What is 17 + 25?", "answer": "42"}}

and reads one JSON response per line on stdout, in any order:

    {"id": "q17", "score": 1.0, "charged": 1, "outputs": {"answer": "42"}}
    {"id": "q17", "infra_failure": true, "error": "HTTP 503 ..."}

Usage: chat_worker.py [--system-prompt-file FILE | --bundle-system-prompt NAME]

--bundle-system-prompt NAME reads the system prompt from the file NAME in
each request's "bundle" folder (the rollouts of an optimize stage with
bundle_in_request = true), so that one worker serves every candidate bundle.

Standard library only. Requests run on CAIRN_MAX_IN_FLIGHT threads.
"""

import concurrent.futures
import json
import os
import sys
import threading
import urllib.error
import urllib.request

TIMEOUT_S = 600


def read_file(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def system_prompt_source(argv):
    """A function of the request giving its system prompt (or None)."""
    if len(argv) >= 3 and argv[1] == "--system-prompt-file":
        prompt = read_file(argv[2])
        return lambda request: prompt
    if len(argv) >= 3 and argv[1] == "--bundle-system-prompt":
        # Read for every request: a method may rewrite a bundle folder
        # between rollouts (cairn keys each rollout by the content it has).
        name = argv[2]
        return lambda request: read_file(os.path.join(request["bundle"], name))
    return lambda request: None


def normalize(text):
    return " ".join(str(text).strip().lower().split()).rstrip(".")


def ask(endpoint, model, messages, temperature=0):
    body = json.dumps({"model": model, "messages": messages, "temperature": temperature}).encode()
    req = urllib.request.Request(
        endpoint.rstrip("/") + "/chat/completions",
        data=body,
        headers={"Content-Type": "application/json", "User-Agent": os.environ.get("WORKER_USER_AGENT", "cairn-chat-worker")},
    )
    with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
        return json.load(resp)["choices"][0]["message"]["content"]


def evaluate(request, system_prompt):
    item = request["item"]
    model = request.get("model") or os.environ["MODEL_ID"]
    messages = []
    if system_prompt is not None:
        messages.append({"role": "system", "content": system_prompt})
    messages.append({"role": "user", "content": item["question"]})
    try:
        answer = ask(request["endpoint"], model, messages, (request.get("runtime") or {}).get("temperature", 0))
    except urllib.error.HTTPError as e:
        if e.code == 429 or e.code >= 500:
            # Overloaded or down: the endpoint failed, not the item.
            return {"id": request["id"], "infra_failure": True, "error": f"HTTP {e.code}: {e.reason}"}
        # Any other 4xx: the server refused this item (a prompt over the
        # context length...). Retrying cannot help: the item scores 0.
        detail = e.read()[:300].decode("utf-8", "replace")
        return {"id": request["id"], "score": 0.0, "charged": 1, "error": f"HTTP {e.code}: {detail}"}
    except (urllib.error.URLError, OSError, ValueError, KeyError) as e:
        # Connection refused or reset, a timeout, a garbled answer.
        return {"id": request["id"], "infra_failure": True, "error": f"{type(e).__name__}: {e}"}
    score = 1.0 if normalize(answer) == normalize(item["answer"]) else 0.0
    return {"id": request["id"], "score": score, "charged": 1, "outputs": {"answer": answer}}


def main():
    system_prompt = system_prompt_source(sys.argv)
    write_lock = threading.Lock()

    def work(request):
        try:
            response = evaluate(request, system_prompt(request))
        except Exception as e:  # every item gets an answer: a bug must not hang it
            response = {"id": request.get("id"), "error": f"{type(e).__name__}: {e}"}
        line = json.dumps(response) + "\n"
        with write_lock:
            sys.stdout.write(line)
            sys.stdout.flush()

    threads = max(1, int(os.environ.get("CAIRN_MAX_IN_FLIGHT", "1")))
    with concurrent.futures.ThreadPoolExecutor(max_workers=threads) as pool:
        for line in sys.stdin:
            if line.strip():
                pool.submit(work, json.loads(line))


if __name__ == "__main__":
    main()
