"""Pure metric math: no models, no I/O. Unit-tested on hand-computed values."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def average_precision(relevant: Sequence[bool | float], n_relevant_total: int | None = None) -> float:
    """Rank-aware precision of a ranked list of verdicts: mean of precision@k over the ranks k that are relevant.

    ``relevant[i]`` is the verdict for rank i+1 (bool or a 0/1 score). With ``n_relevant_total`` (labels known) the
    mean is over all relevant items, so missing ones count as 0 (classic AP); otherwise over those retrieved
    (ragas-style context precision). A list with no relevant item scores 0.
    """
    rel = [1.0 if float(r) >= 0.5 else 0.0 for r in relevant]
    hits, total = 0.0, 0.0
    for k, r in enumerate(rel, start=1):
        if r:
            hits += 1
            total += hits / k
    denom = n_relevant_total if n_relevant_total is not None else hits
    return total / denom if denom else 0.0


def fraction(flags: Sequence[bool]) -> float | None:
    """Share of True; None for an empty list (nothing to measure)."""
    return sum(1 for f in flags if f) / len(flags) if len(flags) else None


def f1(precision: float | None, recall: float | None) -> float | None:
    if precision is None or recall is None:
        return None
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def claim_prf(answer_claims_supported: Sequence[bool],
              reference_claims_covered: Sequence[bool]) -> dict[str, float | None]:
    """Claim-level precision (answer claims backed by the reference), recall (reference claims present in the
    answer) and their F1, as in RAGChecker / ragas FactualCorrectness."""
    p = fraction(answer_claims_supported)
    r = fraction(reference_claims_covered)
    return {"precision": p, "recall": r, "f1": f1(p, r)}


def bootstrap_ci(values: Sequence[float], *, n_resamples: int = 2000, confidence: float = 0.95,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean. One value gives a zero-width interval; none gives (nan, nan)."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return (float("nan"), float("nan"))
    if x.size == 1:
        return (float(x[0]), float(x[0]))
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(n_resamples, x.size))].mean(axis=1)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return (float(lo), float(hi))


MIN_BOOTSTRAP = 5  # fewer values than this (or all equal): a bootstrap's resamples are too few, or all the same


def mean_ci(values: Sequence[float], *, n_resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95% CI of the mean of scores in [0, 1]: the percentile bootstrap, except where it would claim certainty it
    does not have (fewer than MIN_BOOTSTRAP values, or all of them equal: one value of 0.7, or thirty 1.0s, give
    a zero-width bootstrap interval). There the Wilson interval of the mean is used: a score in [0, 1] varies at
    most as much as a yes/no with the same mean, so it is the honest (wide) bound."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return (float("nan"), float("nan"))
    if x.size < MIN_BOOTSTRAP or float(x.max()) == float(x.min()):
        return wilson_interval(float(x.sum()), int(x.size))
    return bootstrap_ci(x.tolist(), n_resamples=n_resamples, seed=seed)


def difference_ci(diffs: Sequence[float], *, n_resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95% CI of the mean of paired differences of two [0, 1] scores (each in [-1, 1]): as ``mean_ci`` on the
    differences mapped to [0, 1], then mapped back; five samples that all went from 1 to 0 are a likely regression,
    not a certain one."""
    lo, hi = mean_ci([(float(d) + 1) / 2 for d in diffs], n_resamples=n_resamples, seed=seed)
    return 2 * lo - 1, 2 * hi - 1


def wilson_interval(hits: float, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score 95% interval of a proportion ``hits / n``: honest at 0/n and n/n (a bootstrap of n agreeing
    labels gives [1, 1], certainty from a handful)."""
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    # at 0/n the lower bound is 0 and at n/n the upper bound is 1 exactly (the float sum can land a hair inside)
    return (0.0 if p <= 0 else max(0.0, centre - half)), (1.0 if p >= 1 else min(1.0, centre + half))


def cosine_to_unit(cos: float) -> float:
    """Map a cosine similarity to [0, 1] by clipping negatives (unrelated texts sit near 0 for sentence embedders)."""
    return float(min(1.0, max(0.0, cos)))
