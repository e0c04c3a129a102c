"""Retrieval metrics (recall@k, precision@k, MRR@k, nDCG@k) from pytrec_eval, the trec_eval reference
implementation, over document-level rankings. Queries without a relevant id (a grade above 0) are skipped, not
scored 0 or 1.

The conventions are trec_eval's (BEIR reports the same numbers): a ranking counts each id once, at its first
occurrence, and is read in its order (never re-sorted by score, so tied scores keep their ranks); relevant means a
grade above 0 (0 and negative grades are judged not relevant and gain nothing); recall@k is the relevant ids in the
top k over all relevant ids (retrieved or not, in the corpus or not); precision@k divides by k even when fewer than
k were ranked; mrr@k is 1 / the rank of the first relevant id in the top k, else 0; nDCG@k's gain is the grade itself
(not 2^grade - 1) with a log2(rank + 1) discount, against the ideal DCG of all relevant ids sorted by grade, cut at k.
tests/eval/test_retrieval_metrics.py holds these definitions written out and compares them on random cases."""
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
    # an empty ranking is an empty run (every measure 0), never a placeholder id a label could name
    run = {q: ranking_to_run(list(dict.fromkeys(rankings.get(q, [])))[:kmax]) for q in labelled}
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
