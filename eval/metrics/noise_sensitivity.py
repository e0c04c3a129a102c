"""noise_sensitivity (RAGChecker): the share of the answer's claims that are wrong against the reference yet supported
by a retrieved chunk: the model repeated what it should have ignored. Lower is better. The evidence splits it by the
chunks the support came from: ``relevant`` (chunks that support some claim of the reference) and ``irrelevant``."""
from __future__ import annotations

from corpora.records import MetricResult, Trace
from eval.answerability import refused
from eval.claims import decompose
from eval.metrics.base import Ask, Metric, against_reference, no_claims
from eval.metrics.verify import Verifier

NAME = "noise_sensitivity"


def applies(t: Trace, judge: str) -> MetricResult | None:
    """Not applicable whatever was retrieved: no usable reference, a blocked answer, a refusal."""
    if (fixed := against_reference(NAME, t, judge, "no reference answer to tell a wrong claim by")) is not None:
        return fixed
    if refused(t):
        return MetricResult.not_applicable(NAME, judge, "a refusal makes no claim")
    return None


def rules(t: Trace, judge: str) -> MetricResult | None:
    if not decompose(t.answer):
        return MetricResult.unmeasured(NAME, judge, no_claims(t.answer))
    if not t.contexts:
        return MetricResult.ok(NAME, judge, 0.0, claims=[], note="no context retrieved")
    return None


def compute(v: Verifier, judge: str, traces: list[Trace]) -> list[MetricResult]:
    items: list[tuple[list[str], list[tuple[str, str]]]] = []
    leads: list[str] = []
    given: list[str] = []  # numbers and identifiers must match exactly (exact_facts): "32 tokens" is not "16 tokens"
    for t in traces:  # per trace: the answer's claims vs the reference, then vs each chunk, and the reference vs it
        answer, reference = decompose(t.answer), decompose(t.reference or "")
        items.append((answer, [("reference", t.reference or "")]))
        leads.append(t.question)
        given.append(t.question)
        for c in t.chunks:
            items += [(answer, [(c.chunk_id, c.text)]), (reference, [(c.chunk_id, c.text)])]
            leads += ["", ""]
            given += [t.question, t.question]
    verdicts = iter(v.verify(items, leads, given=given))
    out = []
    for t in traces:
        correct = [x.verdict == "supported" for x in next(verdicts)]
        per_chunk = [(c.chunk_id, next(verdicts), next(verdicts)) for c in t.chunks]
        relevant = {cid: any(x.verdict == "supported" for x in ref) for cid, _, ref in per_chunk}
        support = [[cid for cid, ans, _ in per_chunk if ans[k].verdict == "supported"] for k in range(len(correct))]
        noise = [by for ok, by in zip(correct, support) if not ok and by]
        n = len(correct)
        out.append(MetricResult.ok(
            NAME, judge, len(noise) / n, relevant_chunks=[cid for cid, r in relevant.items() if r],
            claims=[{"claim": c, "correct": ok, "supported_by": by}
                    for c, ok, by in zip(decompose(t.answer), correct, support)],
            relevant=sum(any(relevant[c] for c in by) for by in noise) / n,
            irrelevant=sum(any(not relevant[c] for c in by) for by in noise) / n))
    return out


def asks(t: Trace, r: MetricResult) -> list[Ask]:
    """A claim's correctness against the reference, and its support by each chunk that did not support it."""
    chunks = {c.chunk_id: c.text for c in t.chunks}
    return [a for c in r.evidence.get("claims", []) for a in (
        [] if c["correct"] else [Ask(claim=c["claim"], texts=(t.reference or "",), lead=t.question)]) + [
        Ask(claim=c["claim"], texts=(text,)) for cid, text in chunks.items() if cid not in c["supported_by"]]]


METRIC = Metric(
    name=NAME,
    summary="share of the answer's claims wrong against the reference yet supported by a retrieved chunk (lower is "
            "better; split by relevant and irrelevant chunks)",
    needs=frozenset({"contexts", "answer", "reference"}),
    rules=rules,
    applies=applies,
    compute=compute,
    texts=lambda t: [t.answer, t.reference or "", " ".join(t.context_texts)],
    asks=asks,
    default=False,
    higher_is_better=False,
    display=6,
)
