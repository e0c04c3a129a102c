"""answer_correctness: claim-level F1 between the answer and the reference (precision: the answer's claims the
reference supports; recall: the reference's claims the answer supports), both read with the question as context.
Numbers and identifiers must match exactly, and an answer opening with the opposite yes/no of the reference is wrong
(key_facts: a judge's score cannot overrule them). A refusal is correct exactly when the question is unanswerable."""
from __future__ import annotations

from dataclasses import replace

from corpora.records import MetricResult, Trace
from eval.answerability import refused, unanswerable
from eval.claims import decompose
from eval.mathx import claim_prf
from eval.metrics.base import BLOCKED, Metric, no_claims, unsupported_claims
from eval.metrics.key_facts import missing_facts, polarity_conflict
from eval.metrics.verify import ClaimVerdict, Verifier

NAME = "answer_correctness"


def rules(t: Trace, judge: str) -> MetricResult | None:
    u = unanswerable(t)
    if t.outcome == "blocked":
        return MetricResult.not_applicable(NAME, judge, BLOCKED)
    if u is None:
        return MetricResult.not_applicable(NAME, judge, "no reference answer")
    if refused(t) or u:
        ok = refused(t) == bool(u)
        why = ("correct refusal" if ok and u else "missed refusal: the corpus cannot answer this" if u
               else "wrong refusal: the corpus holds the answer")
        return MetricResult.ok(NAME, judge, 1.0 if ok else 0.0, refusal=refused(t), unanswerable=bool(u), note=why)
    if not (t.reference or "").strip():  # answerable by its labels, but nothing to compare the answer with
        return MetricResult.not_applicable(NAME, judge, "no reference answer")
    if not decompose(t.answer):
        return MetricResult.unmeasured(NAME, judge, no_claims(t.answer))
    return None


def compute(v: Verifier, judge: str, traces: list[Trace]) -> list[MetricResult]:
    items, leads = [], []
    for t in traces:  # the question is given, not claimed: an answer restating it adds no claim beyond the reference;
        # it leads every premise window but is never a premise alone (a question asserts nothing)
        items.append((decompose(t.answer), [("reference", t.reference or "")]))
        items.append((decompose(t.reference or ""), [("answer", t.answer)]))
        leads += [t.question, t.question]
    verdicts = v.verify(items, leads)
    out = []
    for n in range(len(traces)):
        t = traces[n]
        ans_v = [exact_facts(v, t.reference or "", t.question) for v in verdicts[2 * n]]
        ref_v = [exact_facts(v, t.answer, t.question) for v in verdicts[2 * n + 1]]
        if polarity_conflict(t.answer, t.reference or ""):
            out.append(MetricResult.ok(NAME, judge, 0.0, precision=0.0, recall=0.0,
                                       note="the answer opens with the opposite yes/no of the reference",
                                       answer_claims=[x.as_dict() for x in ans_v],
                                       reference_claims=[x.as_dict() for x in ref_v]))
            continue
        prf = claim_prf([x.verdict == "supported" for x in ans_v], [x.verdict == "supported" for x in ref_v])
        if prf["f1"] is None:
            out.append(MetricResult.unmeasured(NAME, judge, "answer or reference has no claims"))
            continue
        out.append(MetricResult.ok(NAME, judge, prf["f1"], precision=prf["precision"], recall=prf["recall"],
                                   answer_claims=[x.as_dict() for x in ans_v],
                                   reference_claims=[x.as_dict() for x in ref_v]))
    return out


def exact_facts(v: ClaimVerdict, other: str, question: str) -> ClaimVerdict:
    """A supported claim whose number or identifier the other side never states is not supported (key_facts)."""
    if v.verdict != "supported":
        return v
    missing = missing_facts(v.claim, other, question)
    if not missing:
        return v
    return replace(v, verdict="unsupported", note=f"the other side never states {', '.join(missing)}")


METRIC = Metric(
    name=NAME,
    summary="claim-level F1 between answer and reference (precision and recall kept)",
    needs=frozenset({"answer", "reference"}),
    rules=rules,
    compute=compute,
    texts=lambda t: [t.answer, t.reference or "", t.question],
    asks=lambda t, r: unsupported_claims(r, [("answer_claims", [t.reference or ""], t.question),
                                             ("reference_claims", [t.answer], t.question)]),
    cut=0.5,  # at or above: right
    display=2,
    ragas="FactualCorrectness",
)
