"""eval/meta/stats.py: the clustered AUROC of a resample, zero-width CIs, and the reason of every None statistic."""
import numpy as np
import pytest

from eval.mathx import wilson_interval
from eval.meta import stats


def _brute_auroc(s, y, clusters, draws):
    """A resample's AUROC from first principles, O(m^2) over the resample's records: every copy of a positive
    against every copy of a negative, except that a cluster's members meet only within the same draw of it."""
    members: dict = {}
    for i, c in enumerate(clusters):
        members.setdefault(c, []).append(i)
    copies = [(d, i) for d, c in enumerate(draws) for i in members[c]]
    won = met = 0.0
    for da, a in copies:
        for db, b in copies:
            if y[a] == 1 and y[b] == 0 and (clusters[a] != clusters[b] or da == db):
                met += 1
                won += (s[a] > s[b]) + 0.5 * (s[a] == s[b])
    return won / met if met else None


def test_clustered_auroc_equals_the_brute_force_count_and_the_plain_auroc_at_weight_one():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 25))
        s, y = rng.integers(0, 5, n) / 4, rng.integers(0, 2, n)  # many ties, clusters holding both classes
        clusters = [("group", f"c{v}") for v in rng.integers(0, max(1, n // 3), n)]
        keys = list(dict.fromkeys(clusters))
        draws = [keys[i] for i in rng.integers(0, len(keys), len(keys))]
        weights = np.array([draws.count(c) for c in clusters], dtype=float)
        of = stats.clustered_auroc(s, y, clusters)
        got, want = of(weights), _brute_auroc(s, y, clusters, draws)
        assert (got is None and want is None) or got == pytest.approx(want, abs=1e-12)
        plain = stats.auroc(s, y)
        assert (plain is None and of(np.ones(n)) is None) or of(np.ones(n)) == pytest.approx(plain, abs=1e-12)


def _inverted_pairs(n: int = 30, gap: float = 0.01) -> tuple[np.ndarray, np.ndarray]:
    """Random good scores, each bad text a hair above its own good one (every pair lost, cross-pair order random)."""
    good = np.random.default_rng(1).uniform(0, 1, n)
    return good, good + gap


def test_pooled_auroc_ci_over_pairs_contains_its_estimate():
    """Resampling pairs used to count a pair drawn k times k^2 times against itself (here a certain loss) against
    once in the estimate: every resample leaned toward pairwise accuracy, and the CI (0.446, 0.468) excluded the
    pooled AUROC 0.474."""
    good, bad = _inverted_pairs()
    rep = stats.pairwise_report(good, bad, n_resamples=1000)
    lo, hi = rep["auroc_ci"]
    assert lo <= rep["auroc"] <= hi
    again = stats.pairwise_report(good, bad, n_resamples=1000)
    assert again["auroc_ci"] == rep["auroc_ci"]  # seeded: the same CI


def test_grouped_auroc_ci_counts_a_groups_own_comparisons_once_per_draw():
    """The binary report's clustered bootstrap had the same k^2 problem where a group holds both classes: here each
    group is one positive and one negative, the positive a hair below."""
    good, bad = _inverted_pairs()
    s, y = np.column_stack([good, bad]).ravel(), np.array([1, 0] * good.size)
    groups = [f"doc{i // 2}" for i in range(s.size)]
    rep = stats.binary_report(s, y, groups=groups, n_resamples=1000)
    lo, hi = rep["auroc_ci"]
    assert lo <= rep["auroc"] <= hi


def test_a_zero_width_ci_becomes_the_wilson_interval_with_its_note():
    """A perfectly separated set: every resample gives AUROC 1.0, a [1.000, 1.000] CI that would read as certainty.
    In its place the Wilson interval over the smaller class (12 records), which still says 'far from chance'."""
    s, y = np.linspace(0, 1, 24), np.array([0] * 12 + [1] * 12)
    rep = stats.binary_report(s, y, n_resamples=200)
    assert rep["auroc"] == 1.0 and rep["auroc_ci"] == pytest.approx(wilson_interval(12, 12))
    assert rep["auroc_ci"][1] == 1.0 and 0.7 < rep["auroc_ci"][0] < 0.8
    assert rep["ci_notes"]["auroc_ci"] == "Wilson interval over 12 records of the smaller class (every resample gives 1.000)"
    assert "auroc_ci" not in rep["why_none"]
    won = stats.pairwise_report([1.0] * 10, [0.0] * 10, n_resamples=200)
    assert won["pairwise_accuracy_ci"] == pytest.approx(wilson_interval(10, 10))
    assert won["ci_notes"]["pairwise_accuracy_ci"] == "Wilson interval over 10 pairs (every resample gives 1.000)"
    lost = stats.pairwise_report([0.0] * 30, [1.0] * 30, n_resamples=200)  # 0 of 30: reliably below chance
    assert lost["pairwise_accuracy_ci"][0] == 0.0 and lost["pairwise_accuracy_ci"][1] < 0.12
    grouped = stats.pairwise_report([0.0] * 30, [1.0] * 30, n_resamples=200, groups=[i // 5 for i in range(30)])
    assert grouped["ci_notes"]["pairwise_accuracy_ci"].startswith("Wilson interval over 6 groups")  # not 30 pairs
    assert grouped["pairwise_accuracy_ci"][1] > lost["pairwise_accuracy_ci"][1]
    assert stats.bootstrap(lambda i: 1.0, 10, n_resamples=50) == (1.0, 1.0)  # other callers keep their CI (opt-in)
    (ci, why) = stats.bootstrap_ci(lambda i: 1.0, 10, n_resamples=50, refuse_zero_width=True)
    assert ci == (None, None) and why.startswith("every resample gives 1.000")  # no units given: still no CI
    (ci, why) = stats.bootstrap_ci(lambda i: 3.0, 10, n_resamples=50, refuse_zero_width=True, wilson_n=(10, "x"))
    assert ci == (None, None) and why.startswith("every resample gives 3.000")  # no proportion: no Wilson either


def test_a_zero_width_difference_gets_a_wilson_verdict():
    """One judge wins every pair, the other loses every one: the difference is -1 on every resample. That is a loss
    (Wilson interval of the difference mapped to [0, 1]), not 'no verdict'; an exact tie stays a tie."""
    lose = stats.paired_difference(lambda i: 0.0, lambda i: 1.0, 30, n_resamples=50, refuse_zero_width=True,
                                   wilson_n=(30, "pairs"))
    assert lose["verdict"] == "loses" and lose["ci"][0] == -1.0 and lose["ci"][1] < -0.7
    assert lose["note"].startswith("Wilson interval over 30 pairs")
    tie = stats.paired_difference(lambda i: 1.0, lambda i: 1.0, 30, n_resamples=50, refuse_zero_width=True,
                                  wilson_n=(30, "pairs"))
    assert tie["verdict"] == "ties" and tie["ci"][0] < 0 < tie["ci"][1]


def test_every_none_statistic_has_its_reason():
    one_each = stats.binary_report([0.9, 0.1], [1, 0], n_resamples=50)  # the dev split is empty
    assert one_each["threshold"] is None and one_each["balanced_accuracy"] is None
    assert one_each["why_none"]["threshold"].startswith("the dev split (0 records) lacks a label class")
    assert one_each["why_none"]["balanced_accuracy"] == one_each["why_none"]["threshold"]
    assert one_each["why_none"]["auroc_ci"] == "2 records to resample, fewer than 5"
    assert "balanced_accuracy_ci" not in one_each["why_none"]  # its statistic's own reason covers it
    graded = stats.graded_report(np.linspace(0, 1, 8), [0.25, 0.75] * 4, n_resamples=50)
    assert graded["auroc"] is None and graded["spearman"] is not None
    assert graded["why_none"]["auroc"].startswith("no record labelled exactly 0 or 1")
    measured = stats.binary_report(np.linspace(0, 1, 40), [0, 1] * 20, n_resamples=100)
    assert measured["why_none"] == {}


def test_too_few_groups_say_groups_and_single_rows_say_records():
    assert stats.too_few_units(3, None) == "3 records to resample, fewer than 5"
    assert stats.too_few_units(3, [("item", "a"), ("item", "b"), ("item", "c")]) == "3 records to resample, fewer than 5"
    assert stats.too_few_units(6, ["a", "a", "b", "b", "c", "c"]) == "3 groups to resample, fewer than 5"
    assert stats.too_few_units(5, None) is None
