"""Client of cairn's rollout service (docs/rollout-protocol.md); standard library only."""
import json, os, socket


class BudgetExhausted(Exception):
    """The request asked for more rollouts than the budget has left; nothing was charged."""


class RolloutError(Exception):
    """cairn refused the request (bad_request) or could not run it (internal)."""


class Rollouts:
    def __init__(self, path=None):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path or os.environ["CAIRN_ROLLOUT_SOCKET"])
        self.file = self.sock.makefile("rwb")

    def call(self, **request):
        self.file.write(json.dumps(request).encode() + b"\n")
        self.file.flush()
        reply = json.loads(self.file.readline())
        error = reply.get("error")
        if error:
            kind = BudgetExhausted if error["type"] == "budget_exhausted" else RolloutError
            raise kind(error["message"])
        return reply

    def rollout(self, bundle, items):
        """Runs the bundle folder on training items (ids); one result per item, in order."""
        return self.call(op="rollout", bundle=bundle, items=list(items))["results"]

    def status(self):
        """The meter's counts: budget, charged, attempted, infra_failures, remaining."""
        return self.call(op="status")["counts"]
