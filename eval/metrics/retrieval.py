"""Retrieval metrics against labelled relevant document ids, no model: recall@k, precision@k, mrr@k, ndcg@k (any k),
computed by pytrec_eval (eval/retrieval_metrics.py) on the document ranking the retrieved chunks imply."""
from __future__ import annotations

from corpora.records import MetricResult, Trace
from eval.answerability import unanswerable
from eval.metrics.base import Metric
from eval.retrieval_metrics import retrieval_metrics

KINDS = ("recall", "precision", "mrr", "ndcg")
DEFAULTS = ("recall@5", "mrr@10", "ndcg@10")
NAMES = f"{'/'.join(KINDS)}@K (K a positive integer written as 5, not 05)"


def family(name: str) -> Metric | None:
    """The metric ``kind@k`` (k a positive integer in ASCII digits, no leading zero), or None when ``name`` is
    not one."""
    kind, sep, k = name.partition("@")
    if not (sep and kind in KINDS and k.isascii() and k.isdigit() and k == str(int(k)) and int(k) > 0):
        return None

    def labelled(t: Trace, judge: str) -> MetricResult | None:
        if not t.relevant_doc_ids:
            why = "no relevant documents (unanswerable)" if unanswerable(t) else "no relevance labels"
            return MetricResult.not_applicable(name, judge, why)
        return None

    def labels(t: Trace, judge: str) -> MetricResult | None:
        if (na := labelled(t, judge)) is not None:
            return na
        if t.contexts and not t.doc_ids_known:
            return MetricResult.unmeasured(name, judge, "the contexts carry no doc_id to compare with the relevant ids")
        return None

    def compute(_: object, judge: str, traces: list[Trace]) -> list[MetricResult]:
        labelled = {t.sample_id: {d: 1 for d in t.relevant_doc_ids or []} for t in traces}
        per_query = retrieval_metrics(labelled, {t.sample_id: t.retrieved_doc_ids for t in traces}, ks=(int(k),))
        return [MetricResult.ok(name, judge, per_query[t.sample_id][name], relevant=t.relevant_doc_ids,
                                retrieved=t.retrieved_doc_ids[:10]) for t in traces]

    return Metric(name=name, summary=f"{kind} at rank {k} against the labelled relevant documents (pytrec_eval)",
                  needs=frozenset({"contexts", "labels"}), rules=labels, applies=labelled, compute=compute, model=False,
                  default=name in DEFAULTS, display=10 + KINDS.index(kind))
