"""The lexical judge: ScorerJudge over the LexicalScorer (eval/judges/lexical.py), with the results its overlap cannot
measure made unmeasured. (Its own module: lexical.py is imported by eval/judges/features.py, which the metrics that
ScorerJudge imports need, so lexical.py cannot import ScorerJudge.)"""
from __future__ import annotations

from corpora.records import MetricResult, Trace
from eval.judges.lexical import LexicalScorer
from eval.judges.scorer import ScorerJudge
from eval.metrics import get
from eval.metrics.base import Ask
from eval.tokens import content_tokens

NO_QUESTION_WORDS = "the question has no content words to overlap"
NO_CLAIM_WORDS = "a claim has no content words to overlap"


class LexicalJudge(ScorerJudge):
    """The lexical judge: ScorerJudge over a LexicalScorer, whose results resting on an overlap with nothing to count
    are unmeasured, never a 0 (nor "not applicable" because no claim was found): a result whose evidence holds a claim
    without content words ("It is."), or that rests on a question without any (the metric's asks:
    eval.metrics.base.Ask; "Who was it?")."""

    def __init__(self, scorer: LexicalScorer | None = None, config_id: str = "lexical:v1"):
        super().__init__(scorer or LexicalScorer(), config_id=config_id)

    def judge(self, metric: str, traces: list[Trace]) -> list[MetricResult]:
        results = super().judge(metric, traces)
        asks = get(metric).asks
        return [self._check(r, asks(t, r) if r.status != "unmeasured" else []) for t, r in zip(traces, results)]

    def _check(self, r: MetricResult, asks: list[Ask]) -> MetricResult:
        reason = None
        for claims in r.evidence.values():  # every claim the verdicts were given on (supported ones have words)
            for c in claims if isinstance(claims, list) else []:
                if isinstance(c, dict) and isinstance(c.get("claim"), str) and not content_tokens(c["claim"]):
                    c["verdict"], reason = "undecided", NO_CLAIM_WORDS
        if reason is None and any(not a.claim and not content_tokens(a.question) for a in asks):
            reason = NO_QUESTION_WORDS
        return r if reason is None else MetricResult.unmeasured(r.metric, self.name, reason, **r.evidence)
