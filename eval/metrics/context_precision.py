"""context_precision: rank-aware average precision of the chunks' relevance verdicts, each chunk judged against the
reference when there is a usable one (relevant when it supports some claim of the reference), else against the
question."""
from __future__ import annotations

from corpora.records import MetricResult, Trace
from eval.answerability import unanswerable
from eval.claims import decompose, standalone
from eval.mathx import average_precision
from eval.metrics.base import Ask, Metric
from eval.metrics.verify import Verifier

NAME = "context_precision"


def rules(t: Trace, judge: str) -> MetricResult | None:
    if not t.contexts:
        return MetricResult.not_applicable(NAME, judge, "no contexts retrieved")
    return None


def reference_claims(t: Trace) -> list[str]:
    """The claims of the reference a chunk may support (the whole reference when it has none to split)."""
    return standalone(decompose(t.reference or ""), t.question) or [t.reference or ""]


def compute(v: Verifier, judge: str, traces: list[Trace]) -> list[MetricResult]:
    with_ref = [i for i, t in enumerate(traces) if t.reference and unanswerable(t) is not True]
    no_ref = [i for i in range(len(traces)) if i not in set(with_ref)]
    # a chunk is relevant when it supports some claim of the reference: one chunk per fact of a two-fact reference
    # are both relevant (the whole reference as one claim is supported by neither)
    claims = {i: reference_claims(traces[i]) for i in with_ref}
    ref_scores = v.verify([(claims[i], [(c.chunk_id, c.text)]) for i in with_ref for c in traces[i].chunks])
    rel = v.relevance([(traces[i].question, c.text) for i in no_ref for c in traces[i].chunks])
    flat = iter([max(x.score for x in verdicts) for verdicts in ref_scores] + [float(x) for x in rel])
    results: dict[int, MetricResult] = {}
    for i in with_ref + no_ref:
        chunks = traces[i].chunks
        scores = [next(flat) for _ in chunks]
        cut = v.support_threshold if i in set(with_ref) else v.relevance_threshold
        verdicts = [sc >= cut for sc in scores]
        results[i] = MetricResult.ok(NAME, judge, average_precision(verdicts), with_reference=i in set(with_ref),
                                     chunks=[{"chunk_id": c.chunk_id, "relevant": x, "score": round(sc, 4)}
                                             for c, x, sc in zip(chunks, verdicts, scores)])
    return [results[i] for i in range(len(traces))]


def asks(t: Trace, r: MetricResult) -> list[Ask]:
    """Without a reference, every chunk's relevance ask; with one, each claim of the reference checked against each
    chunk that was found not relevant (a relevant verdict was decided)."""
    if not r.evidence.get("with_reference"):
        return [Ask(question=t.question, passage=c.text) for c in t.chunks]
    claims = reference_claims(t)
    return [Ask(claim=claim, texts=(c.text,)) for c, ch in zip(t.chunks, r.evidence.get("chunks", []))
            if not ch["relevant"] for claim in claims]


METRIC = Metric(
    name=NAME,
    summary="rank-aware precision of the chunks' relevance verdicts (against the reference, else the question)",
    needs=frozenset({"contexts"}),
    rules=rules,
    compute=compute,
    texts=lambda t: [t.question, " ".join(t.context_texts), t.reference or ""],
    asks=asks,
    display=3,
    ragas="LLMContextPrecisionWithReference",
)
