"""Results that need no model: blocked answers, refusals, unanswerable questions, missing inputs. Every judge
applies these first (ScorerJudge, the ragas judge), so all families agree on them by construction."""
from __future__ import annotations

from eval.answerability import refused, unanswerable
from eval.claims import decompose
from eval.records import EvalSample, MetricResult

BLOCKED = "answer was blocked by a guardrail"
LLM_METRICS = ("groundedness", "context_precision", "answer_relevance", "context_recall", "answer_correctness")
RETRIEVAL_KINDS = ("recall", "precision", "mrr", "ndcg")
CONTEXT_METRICS = ("groundedness", "context_precision", "context_recall")


def is_retrieval_metric(metric: str) -> bool:
    """recall@k, precision@k, mrr@k, ndcg@k with k a positive integer."""
    name, sep, k = metric.partition("@")
    return bool(sep) and name in RETRIEVAL_KINDS and k.isdigit() and int(k) > 0


def no_contexts(metric: str, s: EvalSample, judge: str) -> MetricResult | None:
    """A metric that reads the retrieved contexts, on a record that carried none: unmeasured, never a measured 0."""
    if not s.has_contexts and (metric in CONTEXT_METRICS or is_retrieval_metric(metric)):
        return MetricResult.unmeasured(metric, judge, "no contexts in the input record")
    return None


def _no_claims(answer: str) -> str:
    return "empty answer: no claims to check" if not answer.strip() else "the answer has no words to check as claims"


def fixed_result(metric: str, s: EvalSample, judge: str) -> MetricResult | None:
    """The result the rules fix for this sample, or None when a judge has to look."""
    u = unanswerable(s)
    if (missing := no_contexts(metric, s, judge)) is not None:
        return missing
    if metric == "groundedness":
        if s.outcome == "blocked":
            return MetricResult.not_applicable(metric, judge, BLOCKED)
        if not decompose(s.answer):
            return MetricResult.unmeasured(metric, judge, _no_claims(s.answer))
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
        if not (s.reference or "").strip():  # answerable by its labels, but nothing to compare the answer with
            return MetricResult.not_applicable(metric, judge, "no reference answer")
        if not decompose(s.answer):
            return MetricResult.unmeasured(metric, judge, _no_claims(s.answer))
    return None
