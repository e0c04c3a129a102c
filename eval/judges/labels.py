"""The labels judge: the metrics that need no model (retrieval against labelled relevant document ids), each from its
declaration's rules and computation (eval/metrics/retrieval.py)."""
from __future__ import annotations

from corpora.records import MetricResult, Trace
from eval.metrics import find, get


class LabelsJudge:
    name = "labels"
    family = "labels"
    config_id = "labels:pytrec_eval"

    def supports(self, metric: str) -> bool:
        m = find(metric)
        return m is not None and not m.model

    def judge(self, metric: str, traces: list[Trace]) -> list[MetricResult]:
        return get(metric).apply(None, self.name, traces)
