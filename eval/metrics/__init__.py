"""The metrics, one module each, registered here (a new metric is one module and one line below).

A metric declares what it needs, its model-free rules, how it computes from a judge's primitives and its verdict cut
(eval/metrics/base.py); ``verify`` and ``claim_candidates``, the primitives the claim metrics compute from, are in
eval/metrics/verify.py. Retrieval metrics are a family: any ``recall|precision|mrr|ndcg@K``."""
from __future__ import annotations

from corpora.errors import UsageError
from eval.metrics import (
    answer_correctness,
    answer_relevance,
    context_precision,
    context_recall,
    context_utilisation,
    groundedness,
    noise_sensitivity,
    retrieval,
)
from eval.metrics.base import Metric

METRICS: dict[str, Metric] = {m.name: m for m in (
    groundedness.METRIC,
    context_precision.METRIC,
    answer_relevance.METRIC,
    context_recall.METRIC,
    answer_correctness.METRIC,
    noise_sensitivity.METRIC,
    context_utilisation.METRIC,
)}
FAMILIES = (retrieval.family,)
DEFAULT_METRICS = (*(m.name for m in METRICS.values() if m.default), *retrieval.DEFAULTS)
METRIC_NAMES = f"{', '.join(METRICS)}, or {retrieval.NAMES}"

__all__ = ["DEFAULT_METRICS", "METRICS", "METRIC_NAMES", "Metric", "get", "is_known", "model_metrics"]


def find(name: str) -> Metric | None:
    if name in METRICS:
        return METRICS[name]
    return next((m for m in (f(name) for f in FAMILIES) if m is not None), None)


def is_known(name: str) -> bool:
    return find(name) is not None


def get(name: str) -> Metric:
    """The metric called ``name``; UsageError naming the valid ones when there is none."""
    m = find(name)
    if m is None:
        raise UsageError(f"unknown metric '{name}' (valid: {METRIC_NAMES})")
    return m


def model_metrics(*, default_only: bool = False) -> list[Metric]:
    """The registered metrics a judge's model computes, in registration order."""
    return [m for m in METRICS.values() if m.model and (m.default or not default_only)]

