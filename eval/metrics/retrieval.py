"""Retrieval metrics against labelled relevant document ids, no model: recall@k, precision@k, mrr@k, ndcg@k (any k),
computed by pytrec_eval (eval/retrieval_metrics.py, which writes out their definitions) on the document ranking the
retrieved chunks imply: each document once, at the rank of its best-ranked chunk (two chunks of one relevant document
are one hit, not two).

The ranking is every chunk the trace records in rank order: the contexts, then the candidates past the cut (a run
with top_k 4 has a recall@10 when its retriever ranked 10; without candidates the list ends at the contexts). The
labels are ``metadata.qrels``' grades when given (nDCG reads them), else grade 1 per relevant document id. Relevant
ids that name chunks (``kv#0``) rather than documents are matched against the chunk ranking."""
from __future__ import annotations

from collections.abc import Mapping

from corpora.records import Candidate, Chunk, MetricResult, Trace, relevant_docs
from eval.answerability import unanswerable
from eval.metrics.base import Metric
from eval.retrieval_metrics import retrieval_metrics

KINDS = ("recall", "precision", "mrr", "ndcg")
DEFAULTS = ("recall@5", "mrr@10", "ndcg@10")
NAMES = f"{'/'.join(KINDS)}@K (K a positive integer written as 5, not 05)"


def _labels_name_chunks(chunks: list[Chunk | Candidate], grades: Mapping[str, int]) -> bool:
    """The relevant labels (grade > 0) name retrieved chunks (``kv#0``) and no retrieved document. A label graded 0
    or below (judged not relevant) never sets the level: a document graded 0 that was retrieved would otherwise turn
    the ranking to documents and leave a retrieved relevant chunk unmatched."""
    relevant = set(relevant_docs(grades))
    return bool(relevant & {c.chunk_id for c in chunks}) and not relevant & {c.doc_id or c.chunk_id for c in chunks}


def ranking(t: Trace) -> tuple[list[str], str]:
    """The ids the relevance labels are compared with, in rank order (contexts, then candidates past the cut), and
    their level: documents (first occurrence of each), or chunks when the relevant ids name retrieved chunks and no
    retrieved document."""
    chunks = t.ranked()
    if _labels_name_chunks(chunks, t.relevance_grades):
        return [c.chunk_id for c in chunks], "chunk"
    return list(dict.fromkeys(c.doc_id or c.chunk_id for c in chunks)), "document"


def relevant_ranks(t: Trace) -> tuple[list[int], list[int]]:
    """The ranks of the retrieved chunks the relevance labels call relevant, read as ``ranking`` reads them (documents,
    or chunks when the labels name chunks): those given to the generator, and the candidates past the cut."""
    grades = t.relevance_grades
    by_chunk = _labels_name_chunks(t.ranked(), grades)
    relevant = set(relevant_docs(grades))

    def hit(c: Chunk | Candidate) -> bool:
        return (c.chunk_id if by_chunk else c.doc_id or c.chunk_id) in relevant

    return sorted(c.rank for c in t.chunks if hit(c)), sorted(c.rank for c in t.candidates if hit(c))


def family(name: str) -> Metric | None:
    """The metric ``kind@k`` (k a positive integer in ASCII digits, no leading zero), or None when ``name`` is
    not one."""
    kind, sep, k = name.partition("@")
    if not (sep and kind in KINDS and k.isascii() and k.isdigit() and k == str(int(k)) and int(k) > 0):
        return None

    def labelled(t: Trace, judge: str) -> MetricResult | None:
        grades = t.relevance_grades
        if not relevant_docs(grades):  # nothing to find: excluded with its reason, never a 0 (or a 1) in the means
            why = ("no relevant documents (unanswerable)" if unanswerable(t) else
                   "no relevant document among the labels (every grade is 0 or below)" if grades else
                   "no relevance labels")
            return MetricResult.not_applicable(name, judge, why)
        return None

    def labels(t: Trace, judge: str) -> MetricResult | None:
        if t.contexts and not t.doc_ids_known:
            return MetricResult.unmeasured(name, judge, "the contexts carry no doc_id to compare with the relevant ids")
        return None

    def compute(_: object, judge: str, traces: list[Trace]) -> list[MetricResult]:
        # keyed by position, not sample id: two traces of one id in a batch must not share one ranking
        ranked = {str(i): ranking(t) for i, t in enumerate(traces)}
        grades = {str(i): t.relevance_grades for i, t in enumerate(traces)}
        per_query = retrieval_metrics(grades, {q: ids for q, (ids, _) in ranked.items()}, ks=(int(k),))
        return [MetricResult.ok(name, judge, per_query[q][name], relevant=relevant_docs(grades[q]),
                                retrieved=ranked[q][0][:10], **({"level": "chunk"} if ranked[q][1] == "chunk" else {}))
                for q in ranked]

    return Metric(name=name, summary=f"{kind} at rank {k} against the labelled relevant documents (pytrec_eval)",
                  needs=frozenset({"contexts", "labels"}), rules=labels, applies=labelled, compute=compute, model=False,
                  default=name in DEFAULTS, display=10 + KINDS.index(kind))
