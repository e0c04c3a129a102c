"""context_utilisation (RAGChecker): of the reference's claims that the retrieved context holds, the share the answer
also makes: how much of what retrieval found the generator used. Not applicable when the context holds none."""
from __future__ import annotations

from corpora.records import MetricResult, Trace
from eval.claims import decompose
from eval.metrics.base import Metric, against_reference, passages, unsupported_claims, wordless
from eval.metrics.verify import Verifier

NAME = "context_utilisation"


def applies(t: Trace, judge: str) -> MetricResult | None:
    """Not applicable whatever was retrieved: no usable reference, or a blocked answer."""
    return against_reference(NAME, t, judge)


def rules(t: Trace, judge: str) -> MetricResult | None:
    if not t.contexts:
        return MetricResult.not_applicable(NAME, judge, "no contexts retrieved")
    if not t.answer.strip():
        return MetricResult.unmeasured(NAME, judge, "empty answer")
    if wordless(t.answer):  # as answer relevance and groundedness say: not a measured 0
        return MetricResult.unmeasured(NAME, judge, "the answer has no words to check")
    return None


def compute(v: Verifier, judge: str, traces: list[Trace]) -> list[MetricResult]:
    items: list[tuple[list[str], list[tuple[str, str]]]] = []
    leads: list[str] = []
    given: list[str] = []  # numbers and identifiers must match exactly (exact_facts)
    for t in traces:  # the reference's claims vs the chunks, then vs the answer (read with the question)
        claims = decompose(t.reference or "")
        items += [(claims, passages(t)), (claims, [("answer", t.answer)])]
        leads += ["", t.question]
        given += [t.question, t.question]
    verdicts = v.verify(items, leads, given=given)
    out = []
    for n in range(len(traces)):
        in_context, in_answer = verdicts[2 * n], verdicts[2 * n + 1]
        found = [a for c, a in zip(in_context, in_answer) if c.verdict == "supported"]
        if not in_context:
            out.append(MetricResult.unmeasured(NAME, judge, "the reference has no claims to check"))
        elif not found:
            out.append(MetricResult.not_applicable(NAME, judge, "no claim of the reference is in the retrieved context",
                                                   claims=[c.as_dict() for c in in_context]))
        else:
            out.append(MetricResult.ok(NAME, judge, sum(a.verdict == "supported" for a in found) / len(found),
                                       claims=[c.as_dict() for c in in_context], used=[a.as_dict() for a in found]))
    return out


METRIC = Metric(
    name=NAME,
    summary="share of the reference's claims found in the context that the answer also makes",
    needs=frozenset({"contexts", "answer", "reference"}),
    rules=rules,
    applies=applies,
    compute=compute,
    texts=lambda t: [t.reference or "", t.answer, " ".join(t.context_texts), t.question],
    asks=lambda t, r: unsupported_claims(r, [("claims", t.context_texts, ""), ("used", [t.answer], t.question)]),
    default=False,
    display=7,
)
