"""ScorerJudge: every metric a model computes (eval/metrics/), from one Scorer's two primitive signals. For each
metric the declaration's model-free rules come first, then its computation from the primitives (``verify`` and
``relevance``, eval/metrics/verify.py, which this judge is), batched across traces."""
from __future__ import annotations

from collections.abc import Callable

from corpora.records import MetricResult, Trace
from eval.judges.base import Scorer
from eval.metrics import find, get
from eval.metrics.verify import Verifier

Unreadable = Callable[[list[str]], str | None]


class ScorerJudge(Verifier):
    """``max_premises`` caps the sentence windows scored per claim. ``unreadable`` (eval/judges/scripts.py), when
    given, says why the scorer's model cannot read a metric's texts: such traces are unmeasured with that reason
    instead of scored (after the model-free rules, which still apply). ``config_id`` names the scorer and every
    setting that changes a verdict (eval/judges/registry.py builds it; without one: the scorer's name and class, its
    thresholds and ``max_premises``, so a resumed evaluation never reuses verdicts of other settings)."""

    def __init__(self, scorer: Scorer, max_premises: int = 6, unreadable: Unreadable | None = None,
                 config_id: str | None = None):
        super().__init__(scorer, max_premises)
        self.name = scorer.name
        self.family = scorer.family
        self.unreadable = unreadable
        self.config_id = config_id or (
            f"{scorer.name}:{type(scorer).__qualname__}@support={scorer.support_threshold:g}"
            f"@relevance={scorer.relevance_threshold:g}@premises={max_premises}")

    def supports(self, metric: str) -> bool:
        m = find(metric)
        return m is not None and m.model

    def judge(self, metric: str, traces: list[Trace]) -> list[MetricResult]:
        m = get(metric)
        if self.unreadable is None:
            return m.apply(self, self.name, traces)
        why = [None if m.fixed(t, self.name) else self.unreadable(m.model_texts(t)) for t in traces]
        readable = [t for t, w in zip(traces, why) if w is None]
        scored = iter(m.apply(self, self.name, readable) if readable else [])
        return [next(scored) if w is None else MetricResult.unmeasured(metric, self.name, w) for w in why]
