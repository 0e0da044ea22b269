"""A small Inspect task of our own: sums from a local JSONL file, the
generate() solver and the match() scorer. Run through cairn's model cache
by pipelines/inspect_cached.hcl."""
from inspect_ai import Task, task
from inspect_ai.dataset import FieldSpec, json_dataset
from inspect_ai.scorer import match
from inspect_ai.solver import generate


@task
def arith():
    return Task(
        dataset=json_dataset(
            "../lm_eval/arith.jsonl",
            FieldSpec(input="question", target="answer", id="id"),
        ),
        solver=[generate()],
        scorer=match(numeric=True),
    )
