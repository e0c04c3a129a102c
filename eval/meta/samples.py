"""Meta-evaluation of whole-metric judges (ragas): each labelled item becomes a Trace and the judge scores the
project metric the item calibrates, through the same ``judge(metric, samples)`` call a run uses.

  support items     groundedness of answer = the judged text, contexts = [the evidence]; question = the set's
                    question, or the judged text itself where the set has none (WiCE, generic JSONL)
  context relevance context_precision without a reference: question, contexts = [the passage], answer = the set's
  answer relevance  answer_relevance of (question, answer)
An unmeasured or not-applicable result is a missing score (counted by the runner, left out of the statistics).
"""
from __future__ import annotations

from collections.abc import Sequence

from eval.meta.datasets import ContrastItem, LabelledItem, Task
from eval.meta.scoring import TaskScores
from corpora.records import Chunk, Trace

PROJECT_METRIC = {"groundedness": "groundedness", "context_relevance": "context_precision",  # keys: TASK_METRICS
                  "answer_relevance": "answer_relevance"}


def _sample(sid: str, question: str, answer: str, contexts: Sequence[str]) -> Trace:
    return Trace(sample_id=sid, question=question.strip() or answer.strip() or "-", answer=answer,
                 contexts=[Chunk(chunk_id=f"{sid}#c{k}", text=t, rank=k + 1) for k, t in enumerate(contexts)] or None)


def item_sample(task: Task, item: LabelledItem) -> Trace:
    if task.metric == "context_relevance":
        return _sample(item.id, item.left, item.answer, [item.right])
    if task.metric == "answer_relevance":
        return _sample(item.id, item.left, item.right, [])
    return _sample(item.id, item.question or item.right, item.right, [item.left])


def score_task_samples(judge, task: Task, batch: int = 8) -> TaskScores:
    """Scores of every item of ``task`` from ``judge.judge(project metric, samples)``, in item order."""
    metric = PROJECT_METRIC[task.metric]
    if task.kind == "pairwise":
        items: list[ContrastItem] = task.items
        samples = [_sample(f"{i.id}:good", i.question or i.good, i.good, [i.evidence]) for i in items] + \
                  [_sample(f"{i.id}:bad", i.question or i.bad, i.bad, [i.evidence]) for i in items]
        flat = _values(judge, metric, samples, batch)
        return TaskScores(good=flat[: len(items)], bad=flat[len(items):])
    return TaskScores(scores=_values(judge, metric, [item_sample(task, i) for i in task.items], batch))


def _values(judge, metric: str, samples: list[Trace], batch: int) -> list[float | None]:
    out: list[float | None] = []
    for k in range(0, len(samples), batch):
        out += [r.value if r.status == "ok" else None for r in judge.judge(metric, samples[k:k + batch])]
    return out
