"""context_recall: the share of the reference answer's claims that some retrieved chunk supports (did retrieval find
what the right answer needs). Not applicable without a reference, or when the question is unanswerable."""
from __future__ import annotations

from corpora.records import MetricResult, Trace
from eval.answerability import unanswerable
from eval.metrics.base import Metric, claims_supported, unsupported_claims
from eval.metrics.verify import Verifier

NAME = "context_recall"


def applies(t: Trace, judge: str) -> MetricResult | None:
    if not t.reference:
        return MetricResult.not_applicable(NAME, judge, "no reference answer")
    if unanswerable(t):
        return MetricResult.not_applicable(NAME, judge, "question is unanswerable: nothing to recall")
    return None


def rules(t: Trace, judge: str) -> MetricResult | None:
    if not t.contexts:
        return MetricResult.ok(NAME, judge, 0.0, claims=[], note="no context retrieved")
    return None


def compute(v: Verifier, judge: str, traces: list[Trace]) -> list[MetricResult]:
    return claims_supported(NAME, judge, v, traces, lambda t: t.reference or "")


METRIC = Metric(
    name=NAME,
    summary="share of the reference's claims supported by the chunks",
    needs=frozenset({"contexts", "reference"}),
    rules=rules,
    applies=applies,
    compute=compute,
    texts=lambda t: [t.reference or "", " ".join(t.context_texts)],
    asks=lambda t, r: unsupported_claims(r, [("claims", t.context_texts, "")]),
    display=4,
    ragas="LLMContextRecall",
)
