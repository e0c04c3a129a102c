"""answer_relevance: does the answer address the question (not: is it true), the judge's relevance signal on
(question, answer). A refusal is the relevant response exactly when nothing answers the question."""
from __future__ import annotations

from corpora.records import MetricResult, Trace
from eval.answerability import refused, unanswerable
from eval.metrics.base import BLOCKED, Ask, Metric, wordless
from eval.metrics.verify import Verifier

NAME = "answer_relevance"


def rules(t: Trace, judge: str) -> MetricResult | None:
    if t.outcome == "blocked":
        return MetricResult.not_applicable(NAME, judge, BLOCKED)
    if not t.answer.strip():
        return MetricResult.unmeasured(NAME, judge, "empty answer")
    if wordless(t.answer):  # "...", "[kv#0]": nothing a judge could find relevant or not
        return MetricResult.unmeasured(NAME, judge, "the answer has no words to check")
    if refused(t):
        u = unanswerable(t)
        if u is None:
            return MetricResult.unmeasured(NAME, judge, "refusal, and no label says whether the question is answerable")
        return MetricResult.ok(NAME, judge, 1.0 if u else 0.0, refusal=True)
    return None


def compute(v: Verifier, judge: str, traces: list[Trace]) -> list[MetricResult]:
    scores = v.relevance([(t.question, t.answer) for t in traces])
    return [MetricResult.ok(NAME, judge, float(min(1.0, max(0.0, sc)))) for sc in scores]


METRIC = Metric(
    name=NAME,
    summary="does the answer address the question (not: is it true)",
    needs=frozenset({"question", "answer"}),
    rules=rules,
    compute=compute,
    texts=lambda t: [t.question, t.answer],
    asks=lambda t, r: [Ask(question=t.question, passage=t.answer)],
    display=5,
    ragas="ResponseRelevancy",
)
