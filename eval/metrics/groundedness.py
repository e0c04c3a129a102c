"""groundedness: the share of the answer's claims that some retrieved chunk supports; each claim keeps its verdict,
score, chunk and sentence. A refusal claims nothing, so it is grounded; a blocked answer is not judged."""
from __future__ import annotations

from corpora.records import MetricResult, Trace
from eval.answerability import refused
from eval.claims import decompose
from eval.metrics.base import BLOCKED, Metric, claims_supported, no_claims, unsupported_claims
from eval.metrics.verify import Verifier

NAME = "groundedness"


def rules(t: Trace, judge: str) -> MetricResult | None:
    if t.outcome == "blocked":
        return MetricResult.not_applicable(NAME, judge, BLOCKED)
    if refused(t):  # before the claims: a refusal has none (its parts only decline)
        return MetricResult.ok(NAME, judge, 1.0, refusal=True, claims=[])
    if not decompose(t.answer):
        return MetricResult.unmeasured(NAME, judge, no_claims(t.answer))
    if not t.contexts:
        return MetricResult.ok(NAME, judge, 0.0, claims=[], note="no context retrieved")
    return None


def compute(v: Verifier, judge: str, traces: list[Trace]) -> list[MetricResult]:
    return claims_supported(NAME, judge, v, traces, lambda t: t.answer)


METRIC = Metric(
    name=NAME,
    summary="share of the answer's claims supported by some retrieved chunk",
    needs=frozenset({"contexts", "answer"}),
    rules=rules,
    compute=compute,
    texts=lambda t: [t.answer, " ".join(t.context_texts)],
    asks=lambda t, r: unsupported_claims(r, [("claims", t.context_texts, "")]),
    cut=0.75,  # at or above: the claims are (essentially all) supported
    display=1,
    ragas="Faithfulness",
)
