"""Retrieval metrics (recall@k, precision@k, MRR@k, nDCG@k) from pytrec_eval, the trec_eval reference
implementation, over document-level rankings. Queries without relevance labels are skipped, not scored 0."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from corpora.records import relevant_docs


def ranking_to_run(ranked_ids: Sequence[str]) -> dict[str, float]:
    """A ranked list (first occurrence wins) as a pytrec_eval run with strictly decreasing scores."""
    ids = list(dict.fromkeys(ranked_ids))
    return {d: float(len(ids) - i) for i, d in enumerate(ids)}


def retrieval_metrics(qrels: Mapping[str, Mapping[str, int]], rankings: Mapping[str, Sequence[str]],
                      ks: Sequence[int] = (1, 5, 10)) -> dict[str, dict[str, float]]:
    """Per query: recall@k, P@k, ndcg@k for each k, and mrr@max(k). Only queries with >= 1 relevant id count."""
    import pytrec_eval  # noqa: PLC0415 - lazy: 0.2 s, and the CLI's parser imports this module

    labelled = {q: {d: int(g) for d, g in rel.items()} for q, rel in qrels.items() if relevant_docs(rel)}
    if not labelled:
        return {}
    kmax = max(ks)
    run = {q: ranking_to_run(list(dict.fromkeys(rankings.get(q, [])))[:kmax]) or {"__none__": 0.0} for q in labelled}
    measures = {f"recall.{k}" for k in ks} | {f"P.{k}" for k in ks} | {f"ndcg_cut.{k}" for k in ks} | {"recip_rank"}
    raw = pytrec_eval.RelevanceEvaluator(labelled, measures).evaluate(run)
    out: dict[str, dict[str, float]] = {}
    for q, m in raw.items():
        row = {}
        for k in ks:
            row[f"recall@{k}"] = m[f"recall_{k}"]
            row[f"precision@{k}"] = m[f"P_{k}"]
            row[f"ndcg@{k}"] = m[f"ndcg_cut_{k}"]
        row[f"mrr@{kmax}"] = m["recip_rank"]
        out[q] = row
    return out


def mean_metrics(per_query: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    if not per_query:
        return {}
    keys = next(iter(per_query.values())).keys()
    return {k: float(np.mean([row[k] for row in per_query.values()])) for k in keys}
