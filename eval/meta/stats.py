"""Pure statistics of meta-evaluation: no models, no I/O, seeded. Unit-tested on hand-computed values.

Conventions: a score predicts "positive" when ``score >= threshold``. A statistic that cannot be computed (one class
only, a constant input) is None, never NaN. Bootstrap CIs resample records (pairs, for pairwise data) with
replacement; resamples where the statistic is undefined are skipped, and the CI is None when over half are, or
when it has zero width (a tiny or perfectly separated set: not a certainty; zero up to float noise, ``TOL``). Each
None carries its reason (``why_none`` in the reports). The dev/test split that picks a threshold keeps a group's rows
on one side (``split_by_group``), so balanced accuracy is out of sample even where one document carries many rows."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

import numpy as np

from eval.mathx import MIN_BOOTSTRAP, wilson_interval


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
    from sklearn.metrics import roc_auc_score  # noqa: PLC0415 - lazy: a second of import for every CLI command

    return float(roc_auc_score(y, s)) if _two_classes(y) else None


def auroc_ranks(scores: ArrayLike, labels: ArrayLike) -> float | None:
    """The same AUROC by the Mann-Whitney rank formula (ties get mean ranks, i.e. count half): ~10x faster than
    sklearn per call, which matters in the bootstrap's thousand resamples. Tested equal to ``auroc``."""
    s, y = _arrays(scores, labels)
    if not _two_classes(y):
        return None
    pos = y == 1
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    from scipy.stats import rankdata  # noqa: PLC0415 - lazy: see auroc

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
    from scipy.stats import spearmanr  # noqa: PLC0415 - lazy: see auroc

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


TOL = 1e-9  # float noise: values this close (relative to their size, at least 1) are the same value


def same_value(a: float, b: float) -> bool:
    """``a`` and ``b`` equal up to float noise: the same statistic summed in another order differs in its last bits
    (Spearman -1.0 against -0.9999999999999999), and a zero-width CI must not slip through as a real one."""
    return abs(a - b) <= TOL * max(1.0, abs(a), abs(b))


def above(x: float, bound: float) -> bool:
    """``x`` lies above ``bound`` by more than float noise (a CI's end that is 1e-17 is at 0, not above it)."""
    return x > bound and not same_value(x, bound)


def _percentile_ci(values: list, n_resamples: int, confidence: float,
                   refuse_zero_width: bool = False) -> tuple[CI, str | None]:
    """The percentile CI of the resampled values, or none with the reason (``refuse_zero_width``: none where it has
    zero width, up to float noise)."""
    kept = np.array([v for v in values if v is not None and not np.isnan(v)], dtype=float)
    if kept.size * 2 < n_resamples or kept.size < 2:
        return (None, None), "undefined on over half the resamples (e.g. one label class in most)"
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(kept, [alpha, 1 - alpha])
    if refuse_zero_width and same_value(lo, hi):  # too few or perfectly separated records: it would read as certainty
        every = same_value(kept.min(), kept.max())
        most = "every resample gives" if every else f"over {confidence:.0%} of resamples give"
        return (None, None), f"{most} {lo:.3f}{ZERO_WIDTH}"
    return (float(lo), float(hi)), None


ZERO_WIDTH = ": a zero-width CI would read as certainty"
WILSON = "Wilson interval over "  # how a note on a CI that is no bootstrap's begins


def _wilson_instead(estimate: float | None, wilson_n: tuple[int, str], why: str) -> tuple[CI, str | None]:
    """Where the bootstrap's CI has zero width (every pair won or lost, perfectly separated classes), the Wilson
    interval of the estimate read as a proportion of ``wilson_n`` = (count, unit): the honest bound for a statistic
    in [0, 1] that is a proportion (pairwise accuracy), a mean of two (balanced accuracy) or at most as variable as one
    over the smaller class (AUROC: Var <= A(1 - A) / min(n+, n-), Birnbaum and Klose). Returned with the note saying
    so; no CI when there is no estimate or no unit."""
    count, unit = wilson_n
    if estimate is not None and (same_value(estimate, 0.0) or same_value(estimate, 1.0)):
        estimate = min(1.0, max(0.0, round(estimate)))  # 1.0000000000000002 is 1: float noise, not out of range
    if estimate is None or count < 1 or not 0.0 <= estimate <= 1.0:
        return (None, None), why
    return wilson_interval(estimate * count, count), f"{WILSON}{count} {unit} ({why.removesuffix(ZERO_WIDTH)})"


def too_few_units(n: int, groups: Sequence | None, what: str = "records") -> str | None:
    """Why a bootstrap over ``n`` records (by group when given) can give no CI, or None when it can."""
    u = units(n, groups)
    unit = "groups" if groups is not None and u < n else what  # groups of one row each are that many rows
    unit = unit.removesuffix("s") if u == 1 else unit  # "1 group", not "1 groups"
    return None if u >= MIN_UNITS else f"{u} {unit} to resample, fewer than {MIN_UNITS}"


def bootstrap_ci(stat: Callable[[np.ndarray], float | None], n: int, *, n_resamples: int = 1000, seed: int = 0,
                 confidence: float = 0.95, groups: Sequence | None = None, refuse_zero_width: bool = False,
                 wilson_n: tuple[int, str] | None = None) -> tuple[CI, str | None]:
    """Percentile CI of ``stat(indices)`` over resamples of ``range(n)`` with replacement (by group when given), and
    None with the reason where there is none: fewer than MIN_UNITS records or groups (one group resampled is always
    itself), the statistic undefined on most resamples, or, with ``refuse_zero_width`` (meta-eval), every resample
    giving the same value (a tiny or perfectly separated set, not a certainty). With ``wilson_n`` (count, unit) a
    zero-width CI is replaced by the Wilson interval of the whole set's value over that many units, and the second
    item is the note saying so (``_wilson_instead``): 0 of 30 pairs won is a CI of [0, 0.11], not none."""
    if (few := too_few_units(n, groups)) is not None:
        return (None, None), few
    draw = resampler(n, groups, seed)
    ci, why = _percentile_ci([stat(draw()) for _ in range(n_resamples)], n_resamples, confidence, refuse_zero_width)
    if wilson_n is not None and why is not None and why.endswith(ZERO_WIDTH):
        return _wilson_instead(stat(np.arange(n)), wilson_n, why)
    return ci, why


def bootstrap(stat: Callable[[np.ndarray], float | None], n: int, *, n_resamples: int = 1000, seed: int = 0,
              confidence: float = 0.95, groups: Sequence | None = None, refuse_zero_width: bool = False) -> CI:
    """``bootstrap_ci`` without the reason."""
    return bootstrap_ci(stat, n, n_resamples=n_resamples, seed=seed, confidence=confidence, groups=groups,
                        refuse_zero_width=refuse_zero_width)[0]


def paired_difference(stat_a: Callable[[np.ndarray], float | None], stat_b: Callable[[np.ndarray], float | None],
                      n: int, *, n_resamples: int = 1000, seed: int = 0, confidence: float = 0.95,
                      groups: Sequence | None = None, refuse_zero_width: bool = False,
                      wilson_n: tuple[int, str] | None = None) -> dict:
    """stat_a - stat_b on the same items, with the percentile CI of the difference over paired resamples (both
    statistics on the same resampled indices, by group when given). ``verdict``: 'beats' when the CI lies above 0,
    'loses' when below, 'ties' when it straddles 0, None (with ``reason``) when undefined or without a CI (with
    ``refuse_zero_width``: also where every resample gives the same difference). With ``wilson_n`` (statistics in
    [0, 1]) a zero-width CI is replaced by the Wilson interval of the difference mapped to [0, 1] and back, and
    ``note`` says so: 30 pairs won by one judge and lost by the other is a loss, not no verdict."""
    everything = np.arange(n)
    a, b = (stat_a(everything), stat_b(everything)) if n else (None, None)
    if a is None or b is None:
        return {"difference": None, "ci": (None, None), "verdict": None,
                "reason": "no items" if not n else "a statistic is undefined on these items"}
    if (few := too_few_units(n, groups, "items")) is not None:  # a difference, but no CI and so no verdict
        return {"difference": float(a - b), "ci": (None, None), "verdict": None, "reason": few}
    draw = resampler(n, groups, seed)

    def diff(idx: np.ndarray) -> float | None:
        x, y = stat_a(idx), stat_b(idx)
        return None if x is None or y is None else x - y

    (lo, hi), why = _percentile_ci([diff(draw()) for _ in range(n_resamples)], n_resamples, confidence,
                                   refuse_zero_width)
    note = None
    if wilson_n is not None and why is not None and why.endswith(ZERO_WIDTH):
        (lo, hi), note = _wilson_instead((float(a - b) + 1) / 2, wilson_n, why)
        lo, hi = (None, None) if lo is None or hi is None else (2 * lo - 1, 2 * hi - 1)
        why = why if lo is None else None
    verdict = None if lo is None or hi is None else \
        ("beats" if above(lo, 0.0) else "loses" if above(0.0, hi) else "ties")  # a bound at 0 up to noise: ties
    out = {"difference": float(a - b), "ci": (lo, hi), "verdict": verdict}
    if note and verdict:
        out["note"] = note + ", on the difference mapped to [0, 1]"
    return out if verdict else {**out, "reason": f"no CI of the difference: {why}"}


def _cluster_index(clusters: Sequence) -> np.ndarray:
    """Each record's cluster numbered 0..C-1 in first-seen order (keys of any hashable type: str, tuple)."""
    index: dict = {}
    return np.array([index.setdefault(k, len(index)) for k in clusters], dtype=int)


def _tie_groups(scores: np.ndarray, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each record's tie group (one score within one block), numbered in (block, score) order, and each tie group's
    block: sorted once, so every resample's Mann-Whitney sum is a few O(n) passes."""
    order = np.lexsort((scores, blocks))
    s, b = scores[order], blocks[order]
    new = np.ones(s.size, dtype=bool)
    new[1:] = (s[1:] != s[:-1]) | (b[1:] != b[:-1])
    tie = np.empty(s.size, dtype=int)
    tie[order] = np.cumsum(new) - 1
    return tie, b[new]


def _block_wins(tie: np.ndarray, tie_block: np.ndarray, n_blocks: int, pos_w: np.ndarray,
                neg_w: np.ndarray) -> np.ndarray:
    """Per block: the sum of pos_w[i] * neg_w[j] over its positives i and negatives j with s_i > s_j, half where
    s_i == s_j (a weighted Mann-Whitney count, by cumulative sums over the sorted tie groups)."""
    p = np.bincount(tie, weights=pos_w, minlength=tie_block.size)
    q = np.bincount(tie, weights=neg_w, minlength=tie_block.size)
    before = np.cumsum(q) - q  # negatives' weight in every earlier tie group...
    below = before - before[np.searchsorted(tie_block, tie_block)]  # ...less the earlier blocks': within the block
    return np.bincount(tie_block, weights=p * (below + q / 2), minlength=n_blocks)


def clustered_auroc(scores: ArrayLike, labels: ArrayLike,
                    clusters: Sequence | None = None) -> Callable[[np.ndarray], float | None]:
    """AUROC of a bootstrap resample from each record's multiplicity in it (all ones: the plain AUROC; every record
    of a cluster carries the count of the cluster's draws, k). A positive and a negative of different clusters meet
    k_a * k_b times, as in the resample; of the same cluster (a pair's good and bad text, two rows of one document)
    they would meet k^2 times against once in the estimate, which leans every resample toward the within-cluster
    comparisons (a CI that can exclude its own estimate). They count k times (once per draw): the weighted
    Mann-Whitney sum less (k^2 - k) times each cluster's own wins, over the matching count of comparisons."""
    s, y = _arrays(scores, labels)
    pos, neg = (y == 1).astype(float), (y == 0).astype(float)
    cl = _cluster_index(range(s.size) if clusters is None else clusters)
    n_cl = int(cl.max()) + 1 if cl.size else 0
    everything = _tie_groups(s, np.zeros(s.size, dtype=int))
    own_wins = _block_wins(*_tie_groups(s, cl), n_cl, pos, neg)
    own_pairs = np.bincount(cl, weights=pos, minlength=n_cl) * np.bincount(cl, weights=neg, minlength=n_cl)

    def stat(weights: np.ndarray) -> float | None:
        w = np.asarray(weights, dtype=float)
        k = np.zeros(n_cl)
        k[cl] = w  # the cluster's draw count, read off any of its records
        extra = k * k - k
        comparisons = (w * pos).sum() * (w * neg).sum() - extra @ own_pairs
        if comparisons <= 0:  # one class in the resample
            return None
        return float((_block_wins(*everything, 1, w * pos, w * neg)[0] - extra @ own_wins) / comparisons)

    return stat


def multiplicity(idx: np.ndarray, n: int) -> np.ndarray:
    """How many times each of ``range(n)`` is in the resample ``idx``."""
    return np.bincount(idx, minlength=n).astype(float)


def resampled_auroc(scores: ArrayLike, labels: ArrayLike,
                    groups: Sequence | None = None) -> Callable[[np.ndarray], float | None]:
    """``clustered_auroc`` as a statistic of resampled indices (for ``bootstrap``, with the same ``groups``)."""
    of = clustered_auroc(scores, labels, groups)
    n = len(labels)
    return lambda idx: of(multiplicity(idx, n))


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


def _grouped(n: int, groups: Sequence | None) -> bool:
    """Some group holds two or more of the ``n`` records (groups of one record each split as records do)."""
    return groups is not None and units(n, groups) < n


def _by_group(cl: np.ndarray, dev_groups: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    in_dev = np.isin(cl, np.asarray(list(dev_groups), dtype=int))
    return np.flatnonzero(in_dev), np.flatnonzero(~in_dev)


def split_by_group(labels: ArrayLike, groups: Sequence | None, dev_fraction: float = 0.5,
                   seed: int = 0) -> tuple[np.ndarray, np.ndarray, str | None]:
    """The dev/test split of ``stratified_split`` with every group's rows on one side (rows of one document on both
    sides would make the test split's balanced accuracy partly in-sample), and None, or why no split by group can put
    every label value on both sides (one group only, a value held by one group: the statistics it leaves undefined
    carry that reason). Groups are stratified by the label values they hold: each kind of group (only 0s, only 1s,
    both) is shared out in ``dev_fraction``, then a side that lacks a value held by 2+ groups gets one of them from
    the other side (one whose move leaves that side every value it has). Without groups, or with one record per
    group, exactly ``stratified_split``'s split (the same numbers as before groups were read here)."""
    y = np.asarray(labels, dtype=float)
    if not _grouped(y.size, groups):
        dev, test = stratified_split(y, dev_fraction, seed)
        return dev, test, None
    cl = _cluster_index(groups)
    n_groups = int(cl.max()) + 1
    holding: list[set[float]] = [set() for _ in range(n_groups)]
    for g, v in zip(cl.tolist(), y.tolist()):
        holding[g].add(v)
    holds = [frozenset(h) for h in holding]
    rng = np.random.default_rng(seed)
    order = rng.permutation(n_groups).tolist()  # the seeded order groups are picked in
    dev: set[int] = set()
    for kind in sorted({tuple(sorted(h)) for h in holds}):
        members = [g for g in order if tuple(sorted(holds[g])) == kind]
        k = int(round(len(members) * dev_fraction))
        if len(members) >= 2:
            k = min(max(k, 1), len(members) - 1)
        dev.update(members[:k])
    values = sorted(set(y.tolist()))
    held_by = {v: [g for g in order if v in holds[g]] for v in values}
    for v in values:
        if len(held_by[v]) < 2:
            continue
        for side_lacks in ("dev", "test"):
            src = [g for g in order if (g in dev) == (side_lacks == "test")]  # the other side's groups
            if any(v in holds[g] for g in src) and not any(v in holds[g] for g in order if g not in src):
                cands = [g for g in src if v in holds[g]]
                move = next((g for g in cands if all(any(c in holds[o] for o in src if o != g) for c in holds[g])),
                            cands[0])  # one whose move leaves the other side every value it has, if any does
                dev.symmetric_difference_update({move})
    dev_idx, test_idx = _by_group(cl, dev)
    if n_groups == 1:
        return dev_idx, test_idx, "every record is in one group: a split by group leaves one side empty (no " \
                                  "out-of-sample threshold or balanced accuracy)"
    alone = [v for v in values if len(held_by[v]) < 2]
    if alone:
        which = ", ".join(f"{v:g}" for v in alone)
        return dev_idx, test_idx, (f"every record labelled {which} is in one group (of {n_groups}): a split by "
                                   "group cannot put it on both sides (no out-of-sample threshold or balanced "
                                   "accuracy)")
    return dev_idx, test_idx, None


def pair_split(m: int, groups: Sequence | None, dev_fraction: float = 0.5,
               seed: int = 0) -> tuple[np.ndarray, np.ndarray, str | None]:
    """The seeded dev/test split of ``m`` pairs (each holds both classes), by group when some group holds two or
    more pairs (each side then gets at least one group), and None or why one side is left empty (one group)."""
    rng = np.random.default_rng(seed)
    if not _grouped(m, groups):
        perm = rng.permutation(m)
        k = int(round(m * dev_fraction))
        return np.sort(perm[:k]), np.sort(perm[k:]), None
    cl = _cluster_index(groups)
    n_groups = int(cl.max()) + 1
    perm = rng.permutation(n_groups)
    k = int(round(n_groups * dev_fraction))
    k = min(max(k, 1), n_groups - 1) if n_groups >= 2 else k
    dev, test = _by_group(cl, perm[:k].tolist())
    why = None if n_groups >= 2 else ("every pair is in one group: a split by group leaves one side empty (no "
                                      "out-of-sample threshold or balanced accuracy)")
    return dev, test, why


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


ONE_CLASS = "every item has the same label (AUROC needs both classes)"


def why_none(fields: dict, reasons: dict[str, str | None]) -> dict[str, str]:
    """The reason of each statistic in ``fields`` that is None (a CI: (None, None)); a CI's only while its statistic
    is there (a missing statistic's own reason covers its CI)."""
    out: dict[str, str] = {}
    for key, reason in reasons.items():
        value = fields.get(key)
        missing = value is None or (isinstance(value, tuple) and value == (None, None))
        if missing and reason and not (key.endswith("_ci") and fields.get(key[:-3]) is None):
            out[key] = reason
    return out


def smaller_class(y: np.ndarray, groups: Sequence | None) -> tuple[int, str]:
    """The units a Wilson interval of an AUROC (or a balanced accuracy) counts: the records of the smaller class, or,
    where fewer, the groups holding the class that fewer groups hold (a clustered set's records are not independent,
    and 3 groups of positives among 40 groups are 3 units of evidence about the positives, not 40)."""
    y = np.asarray(y, dtype=float)
    k = int(min((y == 1).sum(), (y == 0).sum()))
    if groups is None:
        return k, "records of the smaller class"
    g_pos = len({groups[i] for i in np.flatnonzero(y == 1)})
    g_neg = len({groups[i] for i in np.flatnonzero(y == 0)})
    g = min(g_pos, g_neg)
    return (g, f"groups holding a {'positive' if g_pos <= g_neg else 'negative'}") if g < k else \
        (k, "records of the smaller class")


def pairs_units(m: int, groups: Sequence | None) -> tuple[int, str]:
    """The units a Wilson interval of a pairwise statistic counts: pairs, or their groups where fewer."""
    u = units(m, groups)
    return (u, "groups") if groups is not None and u < m else (m, "pairs")


def ci_notes(cis: dict[str, tuple[CI, str | None]]) -> dict[str, str]:
    """The note of each CI that is there but is not the bootstrap's (the Wilson interval in its place)."""
    return {key: why for key, (ci, why) in cis.items() if ci[0] is not None and why}


def _split_reasons(threshold: float | None, n_dev: int, n_test: int,
                   split_why: str | None = None) -> dict[str, str | None]:
    """Why no threshold or balanced accuracy: a split that lacks a label class (each class needs 2+ records, or 2+
    groups: ``split_why``, the split by group's own reason, says which)."""
    if split_why:
        return {"threshold": split_why, "balanced_accuracy_dev": split_why, "balanced_accuracy": split_why}
    no_thr = f"the dev split ({n_dev} records) lacks a label class: no threshold chosen"
    return {"threshold": no_thr, "balanced_accuracy_dev": no_thr,
            "balanced_accuracy": no_thr if threshold is None else f"the test split ({n_test} records) lacks a label class"}


def binary_report(scores: ArrayLike, labels: ArrayLike, *, seed: int = 0, n_resamples: int = 1000,
                  dev_fraction: float = 0.5, groups: Sequence | None = None) -> dict:
    """AUROC (all records), balanced accuracy on the test split at the threshold chosen on the dev split, ECE.
    With ``groups`` (one key per record) the CIs resample whole groups and the dev/test split keeps each group on one
    side (``split_by_group``). ``why_none``: each None statistic's reason."""
    s, y = _arrays(scores, labels)
    dev, test, split_why = split_by_group(y, groups, dev_fraction, seed)
    threshold = best_threshold(s[dev], y[dev])
    st, yt = s[test], y[test]
    ci = partial(bootstrap_ci, n_resamples=n_resamples, seed=seed, refuse_zero_width=True)  # [1, 1]: no certainty
    auroc_ci, auroc_why = ci(resampled_auroc(s, y, groups), s.size, groups=groups, wilson_n=smaller_class(y, groups))
    bal_ci, bal_why = ci(lambda i: balanced_accuracy(st[i], yt[i], threshold), st.size, groups=_sub(groups, test),
                         wilson_n=smaller_class(yt, _sub(groups, test)))
    fields = {
        "n": int(s.size), "n_positive": int((y == 1).sum()), "n_negative": int((y == 0).sum()),
        "auroc": auroc(s, y), "auroc_ci": auroc_ci,
        "threshold": threshold, "n_dev": int(dev.size), "n_test": int(test.size),
        "split_unit": "groups" if _grouped(s.size, groups) else "records",
        "balanced_accuracy_dev": balanced_accuracy(s[dev], y[dev], threshold),
        "balanced_accuracy": balanced_accuracy(st, yt, threshold), "balanced_accuracy_ci": bal_ci,
        "one_class_threshold": one_class(st, threshold),
        **_calibration_fields(s, y),
    }
    reasons = {"auroc": ONE_CLASS if s.size else "no records", "auroc_ci": auroc_why, "ece": "no records",
               **_split_reasons(threshold, dev.size, test.size, split_why), "balanced_accuracy_ci": bal_why}
    notes = ci_notes({"auroc_ci": (auroc_ci, auroc_why), "balanced_accuracy_ci": (bal_ci, bal_why)})
    return {**fields, "why_none": why_none(fields, reasons), "ci_notes": notes}


def _calibration_fields(s: np.ndarray, y: np.ndarray) -> dict:
    ece, bins = calibration(s, y)
    return {"ece": ece, "reliability": bins}


def graded_report(scores: ArrayLike, labels: ArrayLike, *, seed: int = 0, n_resamples: int = 1000,
                  groups: Sequence | None = None) -> dict:
    """Spearman over every record; the binary statistics over the records labelled exactly 0 or 1."""
    s, y = _arrays(scores, labels)
    binary = (y == 0) | (y == 1)
    rep = binary_report(s[binary], y[binary], seed=seed, n_resamples=n_resamples,
                        groups=_sub(groups, np.flatnonzero(binary)))
    if not binary.any():  # the binary statistics read the 0/1 subset, and it is empty
        rep["why_none"] = {k: "no record labelled exactly 0 or 1 (the subset AUROC, bal.acc and ECE read)"
                           for k in rep["why_none"]}
    rho_ci, rho_why = bootstrap_ci(lambda i: spearman(s[i], y[i]), s.size, n_resamples=n_resamples, seed=seed,
                                   groups=groups, refuse_zero_width=True)
    fields = {"n_graded": int(s.size), "spearman": spearman(s, y), "spearman_ci": rho_ci}
    reasons = {"spearman": "every graded label, or every score, is the same (Spearman needs two)"
               if s.size >= 2 else f"{s.size} records (Spearman needs two)", "spearman_ci": rho_why}
    return {**rep, **fields, "why_none": {**rep["why_none"], **why_none(fields, reasons)}}


def pairwise_report(good: ArrayLike, bad: ArrayLike, *, seed: int = 0, n_resamples: int = 1000,
                    dev_fraction: float = 0.5, groups: Sequence | None = None) -> dict:
    """Pairwise accuracy (ties half), plus the binary statistics of the pooled texts (good = 1, bad = 0), with the
    dev/test split and the bootstrap over pairs so both texts of a pair stay together (their own comparison counted
    once per draw: ``clustered_auroc``)."""
    g, b = _arrays(good, bad)
    m = g.size
    outcomes = pairwise_outcomes(g, b)
    ci = partial(bootstrap_ci, n_resamples=n_resamples, seed=seed, refuse_zero_width=True)
    pair_ci, pair_why = ci(lambda i: float(outcomes[i].mean()), m, groups=groups, wilson_n=pairs_units(m, groups))

    def pooled(i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.concatenate([g[i], b[i]]), np.concatenate([np.ones(i.size), np.zeros(i.size)])

    every = pooled(np.arange(m))  # both texts of every pair: good ones first, then bad ones
    clusters = list(range(m)) if groups is None else list(groups)  # a pair, or its group, is one cluster
    pooled_auroc = clustered_auroc(*every, clusters + clusters)
    auroc_ci, auroc_why = ci(lambda i: pooled_auroc(np.tile(multiplicity(i, m), 2)), m, groups=groups,
                             wilson_n=pairs_units(m, groups))
    dev, test, split_why = pair_split(m, groups, dev_fraction, seed)  # a pair, or its group, on one side
    threshold = best_threshold(*pooled(dev))
    bal_ci, bal_why = ci(lambda i: balanced_accuracy(*pooled(test[i]), threshold), test.size,
                         groups=_sub(groups, test), wilson_n=pairs_units(test.size, _sub(groups, test)))
    fields = {
        "n": int(m), "pairwise_accuracy": pairwise_accuracy(g, b), "pairwise_accuracy_ci": pair_ci,
        "ties": int((outcomes == 0.5).sum()),
        "auroc": auroc(*every), "auroc_ci": auroc_ci,
        "threshold": threshold, "n_dev": int(dev.size), "n_test": int(test.size),
        "split_unit": "groups" if _grouped(m, groups) else "pairs",
        "balanced_accuracy_dev": balanced_accuracy(*pooled(dev), threshold),
        "balanced_accuracy": balanced_accuracy(*pooled(test), threshold), "balanced_accuracy_ci": bal_ci,
        "one_class_threshold": one_class(pooled(test)[0], threshold),
        **_calibration_fields(*every),
    }
    reasons = {"pairwise_accuracy": "no pairs", "pairwise_accuracy_ci": pair_why, "auroc": "no pairs",
               "auroc_ci": auroc_why, **_split_reasons(threshold, 2 * dev.size, 2 * test.size, split_why),
               "balanced_accuracy_ci": bal_why}
    notes = ci_notes({"pairwise_accuracy_ci": (pair_ci, pair_why), "auroc_ci": (auroc_ci, auroc_why),
                      "balanced_accuracy_ci": (bal_ci, bal_why)})
    return {**fields, "why_none": why_none(fields, reasons), "ci_notes": notes}
