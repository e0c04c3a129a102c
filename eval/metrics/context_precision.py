"""context_precision: rank-aware average precision of the chunks' relevance verdicts, each chunk judged against the
reference when there is a usable one (relevant when it supports some claim of the reference), else against the
question.

A blank chunk (no text, or only whitespace: an adapter that read an empty field) holds nothing to judge, so it gets no
verdict: it is left out of the ranking (the chunks with text keep their order) and the evidence names it
(``blank_chunks``, ``note``), never counted as an irrelevant chunk at its rank in silence. Every chunk blank: unmeasured
(eval.metrics.base.Metric.missing)."""
from __future__ import annotations

from corpora.records import Chunk, MetricResult, Trace
from eval.answerability import unanswerable
from eval.claims import decompose, standalone
from eval.mathx import average_precision
from eval.metrics.base import Ask, Metric
from eval.metrics.verify import ClaimVerdict, Verifier

NAME = "context_precision"


def rules(t: Trace, judge: str) -> MetricResult | None:
    if not t.contexts:
        return MetricResult.not_applicable(NAME, judge, "no contexts retrieved")
    return None


def _verdict(verdicts: list[ClaimVerdict]) -> tuple[bool, float, str | None]:
    """A chunk against the reference's claims: relevant when it supports one; its best score; and, when a score at
    the cut was overruled (exact_facts), why."""
    best = max(verdicts, key=lambda x: x.score)
    relevant = any(x.verdict == "supported" for x in verdicts)
    return relevant, best.score, None if relevant else best.note


def reference_claims(t: Trace) -> list[str]:
    """The claims of the reference a chunk may support (the whole reference when it has none to split)."""
    return standalone(decompose(t.reference or ""), t.question) or [t.reference or ""]


def judged_chunks(t: Trace) -> list[Chunk]:
    """The chunks that get a verdict, in rank order: those with text (a blank one holds nothing to judge)."""
    return [c for c in t.chunks if c.text.strip()]


def blank_note(t: Trace) -> dict:
    """The evidence of the blank chunks left out of the ranking (none: nothing)."""
    blank = [c for c in t.chunks if not c.text.strip()]
    if not blank:
        return {}
    return {"blank_chunks": [c.chunk_id for c in blank],
            "note": f"{len(blank)} blank context(s) (no text to judge) left out of the ranking: ranks "
                    f"{', '.join(str(c.rank) for c in blank)}"}


def compute(v: Verifier, judge: str, traces: list[Trace]) -> list[MetricResult]:
    with_ref = [i for i, t in enumerate(traces) if t.reference and unanswerable(t) is not True]
    no_ref = [i for i in range(len(traces)) if i not in set(with_ref)]
    chunks_of = [judged_chunks(t) for t in traces]
    # a chunk is relevant when it supports some claim of the reference: one chunk per fact of a two-fact reference
    # are both relevant (the whole reference as one claim is supported by neither)
    claims = {i: reference_claims(traces[i]) for i in with_ref}
    pairs = [(i, c) for i in with_ref for c in chunks_of[i]]
    ref_verdicts = v.verify([(claims[i], [(c.chunk_id, c.text)]) for i, c in pairs],
                            given=[traces[i].question for i, _ in pairs])
    rel = v.relevance([(traces[i].question, c.text) for i in no_ref for c in chunks_of[i]])
    # per chunk: (relevant, score, why not despite its score): against the reference, relevant when it supports some
    # claim, a claim whose number or identifier the chunk never states included (exact_facts: an outdated chunk with
    # another number is not relevant whatever its score); against the question, its relevance score at the cut
    judged = iter([_verdict(verdicts) for verdicts in ref_verdicts]
                  + [(float(x) >= v.relevance_threshold, float(x), None) for x in rel])
    results: dict[int, MetricResult] = {}
    for i in with_ref + no_ref:
        chunks = [(c, *next(judged)) for c in chunks_of[i]]
        results[i] = MetricResult.ok(NAME, judge, average_precision([x for _, x, _, _ in chunks]),
                                     with_reference=i in set(with_ref),
                                     chunks=[{"chunk_id": c.chunk_id, "relevant": x, "score": round(sc, 4),
                                              **({"note": why} if why else {})} for c, x, sc, why in chunks],
                                     **blank_note(traces[i]))
    return [results[i] for i in range(len(traces))]


def asks(t: Trace, r: MetricResult) -> list[Ask]:
    """Without a reference, every chunk's relevance ask; with one, each claim of the reference checked against each
    chunk that was found not relevant (a relevant verdict was decided)."""
    if not r.evidence.get("with_reference"):
        return [Ask(question=t.question, passage=c.text) for c in judged_chunks(t)]
    claims = reference_claims(t)
    return [Ask(claim=claim, texts=(c.text,)) for c, ch in zip(judged_chunks(t), r.evidence.get("chunks", []))
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
