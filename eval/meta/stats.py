"""Pure statistics of meta-evaluation: no models, no I/O, seeded. Unit-tested on hand-computed values.

Conventions: a score predicts "positive" when ``score >= threshold``. A statistic that cannot be computed (one class
only, a constant input) is None, never NaN. Bootstrap CIs resample records (pairs, for pairwise data) with
replacement; resamples where the statistic is undefined are skipped, and the CI is None when over half are."""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from eval.mathx import MIN_BOOTSTRAP
from scipy.stats import rankdata, spearmanr
from sklearn.metrics import roc_auc_score


ArrayLike = Sequence[float] | np.ndarray
CI = tuple[float | None, float | None]


def _arrays(scores: ArrayLike, labels: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    s, y = np.asarray(scores, dtype=float), np.asarray(labels, dtype=float)
    if s.shape != y.shape:
        raise ValueError(f"{s.size} scores but {y.size} labels")
    return s, y


def _two_classes(y: np.ndarray) -> bool:
    return bool(np.any(y == 1)) and bool(np.any(y == 0))


def auroc(scores: ArrayLike, labels: ArrayLike) -> float | None:
    """Area under the ROC curve of binary ``labels`` (0/1) ranked by ``scores``; ties count half."""
    s, y = _arrays(scores, labels)
    return float(roc_auc_score(y, s)) if _two_classes(y) else None


def auroc_ranks(scores: ArrayLike, labels: ArrayLike) -> float | None:
    """The same AUROC by the Mann-Whitney rank formula (ties get mean ranks, i.e. count half): ~10x faster than
    sklearn per call, which matters in the bootstrap's thousand resamples. Tested equal to ``auroc``."""
    s, y = _arrays(scores, labels)
    if not _two_classes(y):
        return None
    pos = y == 1
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    return float((rankdata(s)[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def balanced_accuracy(scores: ArrayLike, labels: ArrayLike, threshold: float | None) -> float | None:
    """Mean of the true-positive and true-negative rates when ``score >= threshold`` predicts positive."""
    s, y = _arrays(scores, labels)
    if threshold is None or not _two_classes(y):
        return None
    pred = s >= threshold
    return float((pred[y == 1].mean() + (~pred[y == 0]).mean()) / 2)


def candidate_thresholds(scores: ArrayLike) -> np.ndarray:
    """The lowest score (everything positive) and every midpoint between consecutive distinct scores."""
    u = np.unique(np.asarray(scores, dtype=float))
    return np.concatenate([u[:1], (u[:-1] + u[1:]) / 2]) if u.size else u


def best_threshold(scores: ArrayLike, labels: ArrayLike) -> float | None:
    """The threshold maximising balanced accuracy on these (dev) records; the lowest one among equals."""
    s, y = _arrays(scores, labels)
    if not _two_classes(y):
        return None
    cands = candidate_thresholds(s)
    pred = s[None, :] >= cands[:, None]
    ba = (pred[:, y == 1].mean(axis=1) + (~pred[:, y == 0]).mean(axis=1)) / 2
    return float(cands[int(np.argmax(ba))])


def spearman(scores: ArrayLike, labels: ArrayLike) -> float | None:
    s, y = _arrays(scores, labels)
    if s.size < 2 or np.all(s == s[0]) or np.all(y == y[0]):
        return None
    rho = spearmanr(s, y).statistic
    return None if np.isnan(rho) else float(rho)


def pairwise_outcomes(good: ArrayLike, bad: ArrayLike) -> np.ndarray:
    """Per pair: 1 when the good text outscores the bad one, 0.5 on a tie, 0 otherwise."""
    g, b = _arrays(good, bad)
    return np.where(g > b, 1.0, np.where(g == b, 0.5, 0.0))


def pairwise_accuracy(good: ArrayLike, bad: ArrayLike) -> float | None:
    out = pairwise_outcomes(good, bad)
    return float(out.mean()) if out.size else None


MIN_UNITS = MIN_BOOTSTRAP  # fewer records (or groups): the bootstrap's resamples are too few distinct ones for a CI


def units(n: int, groups: Sequence | None) -> int:
    """What the bootstrap resamples: records, or the distinct groups when given."""
    return n if groups is None else len(set(groups))


def resampler(n: int, groups: Sequence | None, seed: int) -> Callable[[], np.ndarray]:
    """A function drawing one bootstrap resample of ``range(n)``: records with replacement, or, with ``groups`` (one
    key per record), whole groups with replacement (a clustered bootstrap: rows that share a source document move
    together, so the CI is not too narrow when one document carries many rows)."""
    rng = np.random.default_rng(seed)
    if groups is None or len(set(groups)) == n:
        return lambda: rng.integers(0, n, size=n)
    keys = list(dict.fromkeys(groups))
    members = [np.flatnonzero(np.asarray([g == k for g in groups])) for k in keys]
    return lambda: np.concatenate([members[i] for i in rng.integers(0, len(keys), size=len(keys))])


def _percentile_ci(values: list, n_resamples: int, confidence: float) -> CI:
    kept = np.array([v for v in values if v is not None and not np.isnan(v)], dtype=float)
    if kept.size * 2 < n_resamples or kept.size < 2:
        return (None, None)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(kept, [alpha, 1 - alpha])
    return (float(lo), float(hi))


def bootstrap(stat: Callable[[np.ndarray], float | None], n: int, *, n_resamples: int = 1000, seed: int = 0,
              confidence: float = 0.95, groups: Sequence | None = None) -> CI:
    """Percentile CI of ``stat(indices)`` over resamples of ``range(n)`` with replacement (by group when given); none
    (unmeasured) over fewer than MIN_UNITS records or groups: one group resampled is always itself, a zero-width CI
    that would read as certainty."""
    if units(n, groups) < MIN_UNITS:
        return (None, None)
    draw = resampler(n, groups, seed)
    return _percentile_ci([stat(draw()) for _ in range(n_resamples)], n_resamples, confidence)


def paired_difference(stat_a: Callable[[np.ndarray], float | None], stat_b: Callable[[np.ndarray], float | None],
                      n: int, *, n_resamples: int = 1000, seed: int = 0, confidence: float = 0.95,
                      groups: Sequence | None = None) -> dict:
    """stat_a - stat_b on the same items, with the percentile CI of the difference over paired resamples (both
    statistics on the same resampled indices, by group when given). ``verdict``: 'beats' when the CI lies above 0,
    'loses' when below, 'ties' when it straddles 0, None when undefined."""
    everything = np.arange(n)
    a, b = (stat_a(everything), stat_b(everything)) if n else (None, None)
    if a is None or b is None:
        return {"difference": None, "ci": (None, None), "verdict": None,
                "reason": "no items" if not n else "a statistic is undefined on these items"}
    if (u := units(n, groups)) < MIN_UNITS:  # a difference, but no CI and so no verdict (see bootstrap)
        return {"difference": float(a - b), "ci": (None, None), "verdict": None,
                "reason": f"{u} {'groups' if groups is not None else 'items'} to resample, fewer than {MIN_UNITS}"}
    draw = resampler(n, groups, seed)

    def diff(idx: np.ndarray) -> float | None:
        x, y = stat_a(idx), stat_b(idx)
        return None if x is None or y is None else x - y

    lo, hi = _percentile_ci([diff(draw()) for _ in range(n_resamples)], n_resamples, confidence)
    verdict = None if lo is None or hi is None else ("beats" if lo > 0 else "loses" if hi < 0 else "ties")
    out = {"difference": float(a - b), "ci": (lo, hi), "verdict": verdict}
    return out if verdict else {**out, "reason": "the statistic is undefined on too many resamples"}


def stratified_split(labels: ArrayLike, dev_fraction: float = 0.5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Seeded dev/test split keeping each label value's share; every value with 2+ records lands in both parts."""
    y = np.asarray(labels, dtype=float)
    rng = np.random.default_rng(seed)
    dev: list[int] = []
    for value in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == value))
        k = int(round(idx.size * dev_fraction))
        if idx.size >= 2:
            k = min(max(k, 1), idx.size - 1)
        dev.extend(idx[:k].tolist())
    dev_idx = np.array(sorted(dev), dtype=int)
    return dev_idx, np.setdiff1d(np.arange(y.size), dev_idx)


def calibration(scores: ArrayLike, labels: ArrayLike, n_bins: int = 10) -> tuple[float | None, list[dict]]:
    """Expected calibration error of scores read as probabilities of the positive label, and the reliability
    diagram's bins (equal width over [0, 1]; a score of 1.0 falls in the last bin)."""
    s, y = _arrays(scores, labels)
    s = np.clip(s, 0.0, 1.0)
    which = np.minimum((s * n_bins).astype(int), n_bins - 1)
    ece, bins = 0.0, []
    for b in range(n_bins):
        mask = which == b
        count = int(mask.sum())
        mean_score = float(s[mask].mean()) if count else None
        positive_rate = float(y[mask].mean()) if count else None
        if count:
            ece += count / s.size * abs(positive_rate - mean_score)  # type: ignore[operator]
        bins.append({"lo": b / n_bins, "hi": (b + 1) / n_bins, "count": count, "mean_score": mean_score,
                     "positive_rate": positive_rate})
    return (float(ece) if s.size else None), bins


def one_class(scores: ArrayLike, threshold: float | None) -> bool:
    """The threshold puts every record in the same class (a degenerate cut: balanced accuracy is 0.5 by design)."""
    s = np.asarray(scores, dtype=float)
    return threshold is not None and s.size > 0 and len(set((s >= threshold).tolist())) == 1


def _sub(groups: Sequence | None, idx: np.ndarray) -> list | None:
    return None if groups is None else [groups[i] for i in idx]


def binary_report(scores: ArrayLike, labels: ArrayLike, *, seed: int = 0, n_resamples: int = 1000,
                  dev_fraction: float = 0.5, groups: Sequence | None = None) -> dict:
    """AUROC (all records), balanced accuracy on the test split at the threshold chosen on the dev split, ECE.
    With ``groups`` (one key per record) the CIs resample whole groups."""
    s, y = _arrays(scores, labels)
    dev, test = stratified_split(y, dev_fraction, seed)
    threshold = best_threshold(s[dev], y[dev])
    st, yt = s[test], y[test]
    return {
        "n": int(s.size), "n_positive": int((y == 1).sum()), "n_negative": int((y == 0).sum()),
        "auroc": auroc(s, y),
        "auroc_ci": bootstrap(lambda i: auroc_ranks(s[i], y[i]), s.size, n_resamples=n_resamples, seed=seed,
                              groups=groups),
        "threshold": threshold, "n_dev": int(dev.size), "n_test": int(test.size),
        "balanced_accuracy_dev": balanced_accuracy(s[dev], y[dev], threshold),
        "balanced_accuracy": balanced_accuracy(st, yt, threshold),
        "balanced_accuracy_ci": bootstrap(lambda i: balanced_accuracy(st[i], yt[i], threshold), st.size,
                                          n_resamples=n_resamples, seed=seed, groups=_sub(groups, test)),
        "one_class_threshold": one_class(st, threshold),
        **_calibration_fields(s, y),
    }


def _calibration_fields(s: np.ndarray, y: np.ndarray) -> dict:
    ece, bins = calibration(s, y)
    return {"ece": ece, "reliability": bins}


def graded_report(scores: ArrayLike, labels: ArrayLike, *, seed: int = 0, n_resamples: int = 1000,
                  groups: Sequence | None = None) -> dict:
    """Spearman over every record; the binary statistics over the records labelled exactly 0 or 1."""
    s, y = _arrays(scores, labels)
    binary = (y == 0) | (y == 1)
    return {
        **binary_report(s[binary], y[binary], seed=seed, n_resamples=n_resamples,
                        groups=_sub(groups, np.flatnonzero(binary))),
        "n_graded": int(s.size),
        "spearman": spearman(s, y),
        "spearman_ci": bootstrap(lambda i: spearman(s[i], y[i]), s.size, n_resamples=n_resamples, seed=seed,
                                 groups=groups),
    }


def pairwise_report(good: ArrayLike, bad: ArrayLike, *, seed: int = 0, n_resamples: int = 1000,
                    dev_fraction: float = 0.5, groups: Sequence | None = None) -> dict:
    """Pairwise accuracy (ties half), plus the binary statistics of the pooled texts (good = 1, bad = 0), with the
    dev/test split and the bootstrap over pairs so both texts of a pair stay together."""
    g, b = _arrays(good, bad)
    outcomes = pairwise_outcomes(g, b)
    lo, hi = bootstrap(lambda i: float(outcomes[i].mean()), outcomes.size, n_resamples=n_resamples, seed=seed,
                       groups=groups)

    def pooled(i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.concatenate([g[i], b[i]]), np.concatenate([np.ones(i.size), np.zeros(i.size)])

    perm = np.random.default_rng(seed).permutation(g.size)
    k = int(round(g.size * dev_fraction))
    dev, test = np.sort(perm[:k]), np.sort(perm[k:])
    threshold = best_threshold(*pooled(dev))
    return {
        "n": int(g.size), "pairwise_accuracy": pairwise_accuracy(g, b), "pairwise_accuracy_ci": (lo, hi),
        "ties": int((outcomes == 0.5).sum()),
        "auroc": auroc(*pooled(np.arange(g.size))),
        "auroc_ci": bootstrap(lambda i: auroc_ranks(*pooled(i)), g.size, n_resamples=n_resamples, seed=seed,
                              groups=groups),
        "threshold": threshold, "n_dev": int(dev.size), "n_test": int(test.size),
        "balanced_accuracy_dev": balanced_accuracy(*pooled(dev), threshold),
        "balanced_accuracy": balanced_accuracy(*pooled(test), threshold),
        "balanced_accuracy_ci": bootstrap(lambda i: balanced_accuracy(*pooled(test[i]), threshold), test.size,
                                          n_resamples=n_resamples, seed=seed, groups=_sub(groups, test)),
        "one_class_threshold": one_class(pooled(test)[0], threshold),
        **_calibration_fields(*pooled(np.arange(g.size))),
    }
