"""Retrieval metrics against labelled relevant document ids (no model): recall@k, precision@k, MRR@k, nDCG@k,
computed by pytrec_eval on the document ranking the retrieved chunks imply."""
from __future__ import annotations

from eval.answerability import unanswerable
from eval.records import EvalSample, MetricResult
from eval.retrieval_metrics import retrieval_metrics
from eval.rules import is_retrieval_metric, no_contexts

RETRIEVAL_METRICS = ("recall@5", "precision@5", "mrr@10", "ndcg@10")


class LabelsJudge:
    name = "labels"
    family = "labels"

    def supports(self, metric: str) -> bool:
        return is_retrieval_metric(metric)

    def judge(self, metric: str, samples: list[EvalSample]) -> list[MetricResult]:
        labelled = {s.id: {d: 1 for d in s.relevant_ids} for s in samples if s.relevant_ids}
        k = int(metric.split("@")[1])
        per_query = retrieval_metrics(labelled, {s.id: s.retrieved_doc_ids for s in samples}, ks=(k,))
        out = []
        for s in samples:
            if (missing := no_contexts(metric, s, self.name)) is not None:
                out.append(missing)
            elif not s.relevant_ids:
                why = "no relevant documents (unanswerable)" if unanswerable(s) else "no relevance labels"
                out.append(MetricResult.not_applicable(metric, self.name, why))
            elif s.contexts and not s.doc_ids_known:
                out.append(MetricResult.unmeasured(metric, self.name, "the contexts carry no doc_id to compare with "
                                                                      "the relevant ids"))
            else:
                out.append(MetricResult.ok(metric, self.name, per_query[s.id][metric], relevant=s.relevant_ids,
                                           retrieved=s.retrieved_doc_ids[:10]))
        return out
