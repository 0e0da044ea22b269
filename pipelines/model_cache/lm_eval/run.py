"""lm-eval's own command line (python -m lm_eval), with one change: the index
of lm-eval's built-in tasks is not built, only the tasks of --include_path.

lm-eval 0.4.13 reads the YAML of every built-in task (thousands) each time
it starts, before it looks at --tasks: minutes on a small machine, at every
start of a resumed run. This wrapper passes include_defaults=False to its
TaskManager; everything else (arguments, models, requests, outputs) is
lm-eval's. Use `python -m lm_eval` in its place to run built-in tasks.
"""
import lm_eval.tasks

_init = lm_eval.tasks.TaskManager.__init__


def _local_only(self, *args, **kwargs):
    kwargs["include_defaults"] = False
    _init(self, *args, **kwargs)


lm_eval.tasks.TaskManager.__init__ = _local_only

from lm_eval.__main__ import cli_evaluate  # noqa: E402

if __name__ == "__main__":
    cli_evaluate()
