"""Retrieval metrics against labelled relevant document ids (no model): recall@k, precision@k, MRR@k, nDCG@k,
computed by pytrec_eval on the document ranking the retrieved chunks imply."""
from __future__ import annotations

from eval.records import EvalSample, MetricResult
from eval.retrieval_metrics import retrieval_metrics

RETRIEVAL_METRICS = ("recall@5", "precision@5", "mrr@10", "ndcg@10")


class LabelsJudge:
    name = "labels"
    family = "labels"

    def supports(self, metric: str) -> bool:
        name, _, k = metric.partition("@")
        return name in ("recall", "precision", "mrr", "ndcg") and k.isdigit()

    def judge(self, metric: str, samples: list[EvalSample]) -> list[MetricResult]:
        labelled = {s.id: {d: 1 for d in s.relevant_ids} for s in samples if s.relevant_ids}
        k = int(metric.split("@")[1])
        per_query = retrieval_metrics(labelled, {s.id: s.retrieved_doc_ids for s in samples}, ks=(k, 10))
        out = []
        for s in samples:
            if s.relevant_ids is None:
                out.append(MetricResult.not_applicable(metric, self.name, "no relevance labels"))
            elif not s.relevant_ids:
                out.append(MetricResult.not_applicable(metric, self.name, "no relevant documents (unanswerable)"))
            else:
                out.append(MetricResult.ok(metric, self.name, per_query[s.id][metric], relevant=s.relevant_ids,
                                           retrieved=s.retrieved_doc_ids[:10]))
        return out
