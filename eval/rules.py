"""Results that need no model: blocked answers, refusals, unanswerable questions, missing inputs. Every judge
applies these first (ScorerJudge, the ragas judge), so all families agree on them by construction."""
from __future__ import annotations

from eval.answerability import refused, unanswerable
from eval.claims import decompose
from eval.records import EvalSample, MetricResult

BLOCKED = "answer was blocked by a guardrail"


def fixed_result(metric: str, s: EvalSample, judge: str) -> MetricResult | None:
    """The result the rules fix for this sample, or None when a judge has to look."""
    u = unanswerable(s)
    if metric == "groundedness":
        if s.outcome == "blocked":
            return MetricResult.not_applicable(metric, judge, BLOCKED)
        if not decompose(s.answer):
            return MetricResult.unmeasured(metric, judge, "empty answer: no claims to check")
        if refused(s):
            return MetricResult.ok(metric, judge, 1.0, refusal=True, claims=[])
        if not s.contexts:
            return MetricResult.ok(metric, judge, 0.0, claims=[], note="no context retrieved")
    elif metric == "context_precision":
        if not s.contexts:
            return MetricResult.not_applicable(metric, judge, "no contexts retrieved")
    elif metric == "answer_relevance":
        if s.outcome == "blocked":
            return MetricResult.not_applicable(metric, judge, BLOCKED)
        if not s.answer.strip():
            return MetricResult.unmeasured(metric, judge, "empty answer")
        if refused(s):  # refusing is the relevant response exactly when nothing answers the question
            if u is None:
                return MetricResult.unmeasured(metric, judge, "refusal, and no label says whether the question is answerable")
            return MetricResult.ok(metric, judge, 1.0 if u else 0.0, refusal=True)
    elif metric == "context_recall":
        if not s.reference:
            return MetricResult.not_applicable(metric, judge, "no reference answer")
        if u:
            return MetricResult.not_applicable(metric, judge, "question is unanswerable: nothing to recall")
        if not s.contexts:
            return MetricResult.ok(metric, judge, 0.0, claims=[], note="no context retrieved")
    elif metric == "answer_correctness":
        if s.outcome == "blocked":
            return MetricResult.not_applicable(metric, judge, BLOCKED)
        if u is None:
            return MetricResult.not_applicable(metric, judge, "no reference answer")
        if refused(s) or u:
            ok = refused(s) == bool(u)
            why = ("correct refusal" if ok and u else "missed refusal: the corpus cannot answer this" if u
                   else "wrong refusal: the corpus holds the answer")
            return MetricResult.ok(metric, judge, 1.0 if ok else 0.0, refusal=refused(s), unanswerable=bool(u), note=why)
        if not s.answer.strip():
            return MetricResult.unmeasured(metric, judge, "empty answer: no claims to check")
    return None
