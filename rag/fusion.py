"""Fusion of ranked lists, pure and deterministic: reciprocal rank fusion (Cormack et al., 2009), a convex combination
of normalised scores (min-max or z-score), interpolation of two scores of the same candidates (first stage and
reranker), and document-level aggregation of chunk hits."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, TypeVar

Id = TypeVar("Id", str, int)  # what a list ranks: document ids, or chunk positions (ties then go in corpus order)


def reciprocal_rank_fusion(rankings: Sequence[Sequence[Id]], k: int = 60,
                           weights: Sequence[float] | None = None) -> list[tuple[Id, float]]:
    """Fuse ranked id lists: score(d) = sum_i w_i / (k + rank_i(d)), rank starting at 1.

    Ties are broken by the best rank any list gave the id, then by the id (a chunk position: the earlier chunk), so
    the output is deterministic.
    """
    if k <= 0:
        raise ValueError("k must be positive")
    weights = _weights(weights, len(rankings), "ranking")
    scores: dict[Id, float] = {}
    best: dict[Id, int] = {}
    for ranking, w in zip(rankings, weights):
        # a list that repeats an id counts it once, at its best rank, and the repeat takes no rank from the next id
        for rank, doc in enumerate(dict.fromkeys(ranking), start=1):
            scores[doc] = scores.get(doc, 0.0) + w / (k + rank)
            best[doc] = min(best.get(doc, rank), rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], best[kv[0]], kv[0]))


def _weights(weights: Sequence[float] | None, n: int, what: str) -> list[float]:
    """One finite, non-negative weight per list, not all zero (default: 1 each)."""
    out = [float(w) for w in weights] if weights is not None else [1.0] * n
    if len(out) != n:
        raise ValueError(f"one weight per {what}")
    if not all(math.isfinite(w) and w >= 0 for w in out) or not sum(out) > 0:
        raise ValueError("weights must be finite, non-negative and not all zero")
    return out


Normalisation = Literal["minmax", "zscore"]
# what a list contributes for an id it did not return when every id it returned scored the same (one BM25 hit, say):
# below them, as a list with a spread puts its lowest kept id at 0 (min-max) or below its mean (z-score)
# (normalise gives the kept ids 1.0 under min-max, 0.0 under z-score)
_BELOW_TIED = {"minmax": 0.0, "zscore": -1.0}


def normalise(scores: Sequence[float], how: Normalisation = "minmax") -> list[float]:
    """Scores of one list on a common scale: min-max to [0, 1] (all equal: all 1.0), or z-scores (all equal: all 0.0).

    Raw scores of different retrievers (cosine in [-1, 1], BM25 unbounded, a cross-encoder's logits) cannot be added;
    their normalised values can."""
    if how not in ("minmax", "zscore"):
        raise ValueError(f"unknown normalisation {how!r}: expected 'minmax' or 'zscore'")
    xs = [float(s) for s in scores]
    if not xs:
        return []
    if how == "minmax":
        lo, hi = min(xs), max(xs)
        return [1.0] * len(xs) if hi == lo else [(x - lo) / (hi - lo) for x in xs]
    mean = sum(xs) / len(xs)
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / len(xs))
    return [0.0] * len(xs) if sd == 0 else [(x - mean) / sd for x in xs]


def weighted_fusion(scored: Sequence[Sequence[tuple[Id, float]]], weights: Sequence[float] | None = None,
                    how: Normalisation = "minmax") -> list[tuple[Id, float]]:
    """Convex combination of normalised scores: score(d) = sum_i w_i * norm_i(d), the weights scaled to sum to 1.

    Each list holds (id, raw score); it is normalised on its own (a repeated id counts once, at its first position).
    An id a list did not return gets that list's lowest normalised value (it scored at most as well as the worst it
    kept), or, when every id the list kept scored the same (normalised to 1.0 or 0.0), a value below them (0.0 or -1.0):
    a lone keyword match still counts. Ties: best position in any list, then id (a chunk position: the earlier
    chunk)."""
    weights = _weights(weights, len(scored), "list")
    total = sum(weights)
    fused: dict[Id, float] = {}
    best: dict[Id, int] = {}
    per_list: list[tuple[dict[Id, float], float, float]] = []
    for items, w in zip(scored, weights):
        first: dict[Id, float] = {}
        for doc, value in items:
            first.setdefault(doc, value)
        norm = dict(zip(first, normalise(list(first.values()), how)))
        for pos, doc in enumerate(norm):
            best[doc] = min(best.get(doc, pos), pos)
        floor = min(norm.values(), default=0.0)
        if len(set(first.values())) == 1:
            floor = _BELOW_TIED[how]
        per_list.append((norm, floor, w / total))
    for norm, floor, w in per_list:
        for doc in best:
            fused[doc] = fused.get(doc, 0.0) + w * norm.get(doc, floor)
    return sorted(fused.items(), key=lambda kv: (-kv[1], best[kv[0]], kv[0]))


def interpolate(first: Sequence[float], second: Sequence[float], weight: float,
                how: Normalisation = "minmax") -> list[float]:
    """(1 - weight) * norm(first) + weight * norm(second), element-wise over the same candidates: weight 1 is the
    second score alone (pure rerank), 0 the first alone."""
    if not 0.0 <= weight <= 1.0:
        raise ValueError("weight must be in [0, 1]")
    if len(first) != len(second):
        raise ValueError("one second score per first score")
    a, b = normalise(first, how), normalise(second, how)
    return [(1 - weight) * x + weight * y for x, y in zip(a, b)]


Aggregation = Literal["max", "sum2", "sum3"]


def aggregate_documents(hits: Sequence[tuple[str, float]], how: Aggregation = "max") -> list[tuple[str, float]]:
    """Chunk hits (document id, score; best first) -> documents, best first: a document scores its best chunk (max),
    or the sum of its best two or three (``sum2``/``sum3``: a document with several matching chunks climbs). Ties keep
    the order of each document's first chunk."""
    depth = {"max": 1, "sum2": 2, "sum3": 3}.get(how)
    if depth is None:
        raise ValueError(f"unknown aggregation {how!r}: expected max, sum2 or sum3")
    per_doc: dict[str, list[float]] = {}
    for doc, score in hits:
        per_doc.setdefault(doc, []).append(float(score))
    first = {doc: i for i, doc in enumerate(per_doc)}
    totals = {doc: sum(sorted(s, reverse=True)[:depth]) for doc, s in per_doc.items()}
    return sorted(totals.items(), key=lambda kv: (-kv[1], first[kv[0]]))
