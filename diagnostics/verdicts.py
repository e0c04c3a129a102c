"""One reading, per sample, of "is the answer grounded?" and "is it right?": the classifier (classify.py) and the
metric-vs-metric views (disagreement.py, and through it the report and the dashboard's quadrant) all read them here,
with the thresholds of one place (Thresholds), so a sample's quadrant and its failure category cannot disagree.

Each reading keeps "unmeasured" as a state of its own (no result, or the judge could not decide): it is never read as
low nor as high."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from corpora.records import Judgement, MetricResult, Trace
from eval.answerability import refused, unanswerable
from eval.judges.registry import JUDGE_PREFERENCE
from eval.metrics import get

GroundedState = Literal["grounded", "ungrounded", "unmeasured"]
CorrectState = Literal["right", "wrong", "incomplete", "unmeasured"]
# a metric's verdict on one axis of a view: not_applicable is the metric's own state (e.g. correctness without a
# reference), neither measured nor a failure to measure
Axis = Literal["yes", "no", "partial", "unmeasured", "not_applicable"]


@dataclass
class Thresholds:
    grounded: float = get("groundedness").cut  # groundedness at or above (and no claim unsupported): grounded
    # groundedness below: the ungrounded rule fires on its own, after the retrieval rules; at or above it (and not
    # grounded), a wrong answer is an ungrounded hallucination first (the wrong part may be the unsupported claim)
    ungrounded: float = 0.5
    correct: float = get("answer_correctness").cut  # answer correctness (reference recall) at or above: right
    incomplete_recall: float = 0.5  # right, but reference-claim recall below this: incomplete
    noisy: float = 0.34  # context precision below: mostly noise
    off_topic: float = 0.3  # answer relevance below: off topic
    far_rank: int = 3  # first relevant chunk ranked below this: far down

    def cut(self, metric: str) -> float:
        """The value at or above which ``metric`` says yes on a view's axis: these thresholds for groundedness and
        answer correctness, the metric's declared verdict cut for any other."""
        return {"groundedness": self.grounded, "answer_correctness": self.correct}.get(metric, get(metric).cut)


def pick(judgement: Judgement, metric: str, preference: tuple[str, ...] = JUDGE_PREFERENCE) -> MetricResult | None:
    """The result of the most trusted judge that measured ``metric`` (else the first unmeasured one, for its reason)."""
    rs = [r for r in judgement.results if r.metric == metric]
    order = {j: i for i, j in enumerate(preference)}
    rs.sort(key=lambda r: (not r.measured, order.get(r.judge, len(order))))
    return rs[0] if rs else None


def result(judgement: Judgement, metric: str, judge: str | None = None,
           preference: tuple[str, ...] = JUDGE_PREFERENCE) -> MetricResult | None:
    """``judge``'s result for ``metric`` (its last, as the results table keeps it), or with no judge named the pick."""
    if judge is None:
        return pick(judgement, metric, preference)
    return next((r for r in reversed(judgement.results) if r.metric == metric and r.judge == judge), None)


def trace_of(j: Judgement) -> Trace:
    """The judged trace, or a stand-in for a judgement that does not carry it (nothing retrieved, nothing answered)."""
    return j.trace or Trace(sample_id=j.sample_id, question="(question not recorded)")


def claims(r: MetricResult | None, verdicts: tuple[str, ...]) -> list[dict]:
    """The claims of ``r``'s evidence with one of ``verdicts`` (dicts only: a hand-edited line may hold anything)."""
    if r is None or not isinstance(r.evidence.get("claims"), list):
        return []
    return [c for c in r.evidence["claims"] if isinstance(c, dict) and c.get("verdict") in verdicts]


def unsupported_claims(r: MetricResult | None) -> list[dict]:
    return claims(r, ("unsupported", "contradicted"))


def evidence_number(r: MetricResult, key: str, bad: dict[str, str] | None = None) -> float | None:
    """``r.evidence[key]`` as a number in [0, 1], or None when absent. A hand-edited results line may hold anything
    there (``"recall": "0"``): a non-number is read as absent, and ``bad`` gets ``{"metric.key": why}`` so the
    diagnosis says what it ignored."""
    v = r.evidence.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or not 0.0 <= v <= 1.0:
        if bad is not None:
            bad[f"{r.metric}.{key}"] = f"{v!r} is not a number in [0, 1]: read as absent"
        return None
    return float(v)


def evidence_flag(r: MetricResult, key: str, bad: dict[str, str] | None = None) -> bool | None:
    """``r.evidence[key]`` as a bool, or None when absent; anything else is read as absent and noted in ``bad``."""
    v = r.evidence.get(key)
    if v is None or isinstance(v, bool):
        return v
    if bad is not None:
        bad[f"{r.metric}.{key}"] = f"{v!r} is not true or false: read as absent"
    return None


def answer_wrong(r: MetricResult | None, th: Thresholds, bad: dict[str, str] | None = None) -> bool:
    """Wrong against the reference: it changes a fact or the yes/no of the reference (``conflict``), it states none
    of the reference (a judge cannot see every contradiction: "static batching is recommended" reads as backed by
    "continuous batching; static batching is only for offline jobs", but states none of it), or most of what it
    claims is not in the reference while it states less than the cut of it. A right but partial answer (its claims
    backed, some of the reference stated) is 'incomplete'; one that states the reference and adds claims it does not
    state (a verbose answer) is right: what it adds is groundedness's business. Judges without claim-level evidence
    fall back to the value. Evidence that is not a number (or, for ``conflict``, a bool) is read as absent and noted
    in ``bad``."""
    if r is None or not r.measured:
        return False
    p, rec = evidence_number(r, "precision", bad), evidence_number(r, "recall", bad)
    if evidence_flag(r, "conflict", bad):
        return True
    if p is None or rec is None:
        return r.value is not None and r.value < th.correct
    return rec == 0.0 or (rec < th.correct and p < th.correct)


def correctness_verdict(r: MetricResult | None, th: Thresholds, bad: dict[str, str] | None = None) -> str | None:
    """What answer correctness says of an answer: "wrong" (answer_wrong), "incomplete" (not wrong, but its
    reference-claim recall is below ``th.incomplete_recall``), "right", or None when unmeasured."""
    if r is None or not r.measured or r.value is None:
        return None
    if answer_wrong(r, th, bad):
        return "wrong"
    rec = evidence_number(r, "recall", bad)
    return "incomplete" if rec is not None and rec < th.incomplete_recall else "right"


def grounded_state(r: MetricResult | None, th: Thresholds) -> GroundedState:
    """Grounded: groundedness at or above ``th.grounded`` and no claim left unsupported or contradicted (a claim the
    context does not back may be the wrong part of the answer); ungrounded: measured, and either is not so;
    unmeasured: no result (the run did not evaluate it) or the judge could not decide."""
    if r is None or not r.measured or r.value is None:
        return "unmeasured"
    return "grounded" if r.value >= th.grounded and not unsupported_claims(r) else "ungrounded"


def correct_state(r: MetricResult | None, t: Trace, th: Thresholds, bad: dict[str, str] | None = None
                  ) -> CorrectState:
    """correctness_verdict (right, wrong, incomplete: neither right nor wrong), unmeasured when it is None; an answer
    (not a refusal) to a question known unanswerable is wrong whatever the judge matched it with: it should have
    refused."""
    verdict = correctness_verdict(r, th, bad)
    if verdict is None:
        return "unmeasured"
    if unanswerable(t) is True and not refused(t):
        return "wrong"
    return "right" if verdict == "right" else "wrong" if verdict == "wrong" else "incomplete"


def axis(metric: str, r: MetricResult | None, t: Trace, th: Thresholds) -> Axis:
    """``metric``'s verdict on a view's axis: groundedness by grounded_state, answer correctness by correct_state
    (incomplete is "partial"), any other metric at or above its cut (Thresholds.cut); not_applicable where the result
    says so."""
    if r is not None and r.status == "not_applicable":
        return "not_applicable"
    if metric == "groundedness":
        g = grounded_state(r, th)
        return "unmeasured" if g == "unmeasured" else "yes" if g == "grounded" else "no"
    if metric == "answer_correctness":
        c = correct_state(r, t, th)
        return "yes" if c == "right" else "no" if c == "wrong" else "partial" if c == "incomplete" else "unmeasured"
    if r is None or not r.measured or r.value is None:
        return "unmeasured"
    return "yes" if r.value >= th.cut(metric) else "no"
