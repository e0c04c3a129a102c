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


# zero width up to float noise --------------------------------------------------------------------------------------
def _inverse_grades(n: int = 20) -> tuple[list[float], list[float]]:
    """Three grades, scores a perfect inverse of them: Spearman is -1 on every resample, summed in an order that
    gives -0.9999999999999998 on some (the audit's sp6 repro)."""
    y = [(0.25, 0.5, 0.75)[i % 3] for i in range(n)]
    return [{0.25: 1.0, 0.5: 0.6667, 0.75: 0.6}[v] for v in y], y


def test_a_ci_of_zero_width_up_to_float_noise_is_no_ci():
    """(-1.0, -0.9999999999999999) is a zero-width CI: it used to be printed as a real one (and flagged 'worse than
    chance'), and a difference CI of (1.9999999999999996, 2.0) gave 'beats'."""
    s, y = _inverse_grades()
    rep = stats.graded_report(s, y, n_resamples=200)
    assert rep["spearman"] == pytest.approx(-1.0) and rep["spearman_ci"] == (None, None)
    assert rep["why_none"]["spearman_ci"] == "every resample gives -1.000: a zero-width CI would read as certainty"
    best = [1 - v for v in s]
    d = stats.paired_difference(lambda i: stats.spearman(np.asarray(best)[i], np.asarray(y)[i]),
                                lambda i: stats.spearman(np.asarray(s)[i], np.asarray(y)[i]), len(y),
                                n_resamples=200, refuse_zero_width=True)
    assert d["verdict"] is None and "every resample gives 2.000" in d["reason"]
    noisy = [1.0, 1 - 2e-16, 1.0, 1 + 2e-16] * 10  # every value the same up to noise: "every resample gives"
    ci, why = stats._percentile_ci(noisy, 40, 0.95, refuse_zero_width=True)
    assert ci == (None, None) and why.startswith("every resample gives 1.000")
    ci, why = stats._percentile_ci([0.5, 0.5 + 1e-6] * 20, 40, 0.95, refuse_zero_width=True)
    assert ci[0] is not None and why is None  # a real (if narrow) width stays a CI
    assert stats.same_value(-1.0, -0.9999999999999999) and not stats.same_value(0.0, 1e-6)


def test_float_noise_neither_wins_a_verdict_nor_loses_the_wilson_interval():
    """A CI end of 1e-17 is at 0: a tie, not a win; an estimate of 1.0000000000000002 is 1 for the Wilson interval."""
    v = np.array([1e-17] * 19 + [0.5])  # a resample without the 0.5 (36% of them) has a mean of 1e-17: noise on 0
    tie = stats.paired_difference(lambda i: float(v[i].mean()), lambda i: 0.0, 20, n_resamples=200)
    lo, hi = tie["ci"]
    assert 0 < lo < 1e-9 < hi and tie["verdict"] == "ties"
    ci, note = stats._wilson_instead(1.0000000000000002, (12, "records of the smaller class"),
                                     "every resample gives 1.000" + stats.ZERO_WIDTH)
    assert ci == pytest.approx(wilson_interval(12, 12)) and note.startswith("Wilson interval over 12 records")


def test_chance_flags_read_a_bound_at_chance_up_to_noise_as_reaching_it():
    from eval.meta.meta_eval import chance_flag

    assert chance_flag("spearman", (-1.0, -1e-17)) == "Spearman CI includes 0 (chance)"
    assert chance_flag("auroc", (0.5 + 1e-17, 0.9)) == "AUROC CI includes 0.5 (chance)"
    assert chance_flag("auroc", (0.1, 0.4)).startswith("worse than chance")
    assert chance_flag("auroc", (0.6, 0.9)) is None


# the Wilson fallback over groups -----------------------------------------------------------------------------------
def test_the_wilson_fallback_counts_the_groups_holding_the_class_fewer_groups_hold():
    """40 groups, the positives in only 3 of them: 3 units of evidence about the positives, not 40 (nor the 12
    positive records)."""
    y = np.array([1] * 12 + [0] * 40)
    groups = [f"p{i % 3}" for i in range(12)] + [f"n{i}" for i in range(40)]
    assert stats.smaller_class(y, groups) == (3, "groups holding a positive")
    assert stats.smaller_class(y, None) == (12, "records of the smaller class")
    assert stats.smaller_class(y, [("item", str(i)) for i in range(52)]) == (12, "records of the smaller class")
    flipped = 1 - y
    assert stats.smaller_class(flipped, groups) == (3, "groups holding a negative")
    s = y + np.linspace(0, 0.5, y.size)  # perfectly separated: every resample gives 1.0
    rep = stats.binary_report(s, y, groups=groups, n_resamples=200)
    assert rep["auroc_ci"] == pytest.approx(wilson_interval(3, 3))
    assert rep["ci_notes"]["auroc_ci"] == "Wilson interval over 3 groups holding a positive (every resample gives 1.000)"


# the dev/test split by group ---------------------------------------------------------------------------------------
def _sides(groups, dev, test) -> tuple[set, set]:
    return {groups[i] for i in dev}, {groups[i] for i in test}


def test_the_split_keeps_every_group_on_one_side_and_is_stratified():
    rng = np.random.default_rng(0)
    for trial in range(100):
        n_groups = int(rng.integers(2, 30))
        groups = [f"d{int(g)}" for g in rng.integers(0, n_groups, 80)]
        y = rng.integers(0, 2, 80)
        dev, test, why = stats.split_by_group(y, groups, 0.5, seed=trial)
        assert sorted(dev.tolist() + test.tolist()) == list(range(80))
        d, t = _sides(groups, dev, test)
        assert not d & t  # no document on both sides
        holders = {v: {g for g, lab in zip(groups, y) if lab == v} for v in (0, 1)}
        if all(len(h) >= 2 for h in holders.values()):  # possible: every class on both sides, and no reason
            assert why is None and set(y[dev]) == {0, 1} and set(y[test]) == {0, 1}
        else:
            assert why is not None and "group" in why
    # each kind of group (only 0s, only 1s, both) is shared out: 10 pure-negative groups give 5 to each side
    groups = [f"n{i}" for i in range(10) for _ in range(3)] + [f"p{i}" for i in range(4) for _ in range(2)]
    y = [0] * 30 + [1] * 8
    dev, test, why = stats.split_by_group(y, groups, 0.5, seed=3)
    d, t = _sides(groups, dev, test)
    assert why is None and len({g for g in d if g[0] == "n"}) == 5 and len({g for g in d if g[0] == "p"}) == 2
    assert [dev.tolist(), test.tolist()] == [a.tolist() for a in stats.split_by_group(y, groups, 0.5, seed=3)[:2]]


def test_the_split_without_groups_or_with_one_row_a_group_is_the_record_split_unchanged():
    """Results without groups are bit-identical: meta-eval passes each ungrouped row as its own group."""
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 57)
    want = stats.stratified_split(y, 0.5, 4)
    for groups in (None, [("item", str(i)) for i in range(57)]):
        dev, test, why = stats.split_by_group(y, groups, 0.5, 4)
        assert why is None and dev.tolist() == want[0].tolist() and test.tolist() == want[1].tolist()
    s = y * 0.3 + rng.random(57)
    plain = stats.binary_report(s, y, n_resamples=100)
    single = stats.binary_report(s, y, n_resamples=100, groups=[("item", str(i)) for i in range(57)])
    assert plain == single and plain["split_unit"] == "records"
    good, bad = rng.random(30), rng.random(30)
    assert stats.pairwise_report(good, bad, n_resamples=50) == \
        stats.pairwise_report(good, bad, n_resamples=50, groups=list(range(30)))


def test_balanced_accuracy_is_unmeasured_with_the_reason_where_no_split_by_group_is_possible():
    """Every positive in one document: a split by group cannot put positives on both sides, and a record split would
    score the test side on rows of the very document the threshold was chosen on. No number, the reason instead."""
    s = np.linspace(0, 1, 20)
    y = np.array([0] * 10 + [1] * 10)
    one_doc = ["doc"] * 20
    rep = stats.binary_report(s, y, groups=one_doc, n_resamples=50)
    assert rep["balanced_accuracy"] is None and rep["threshold"] is None
    assert rep["why_none"]["balanced_accuracy"].startswith("every record is in one group")
    positives_alone = [f"n{i}" for i in range(10)] + ["pos"] * 10
    rep = stats.binary_report(s, y, groups=positives_alone, n_resamples=50)
    assert rep["balanced_accuracy"] is None and rep["split_unit"] == "groups"
    assert rep["why_none"]["balanced_accuracy"].startswith("every record labelled 1 is in one group (of 11)")
    pairs = stats.pairwise_report(np.ones(10), np.zeros(10), groups=["g"] * 10, n_resamples=50)
    assert pairs["balanced_accuracy"] is None and pairs["why_none"]["balanced_accuracy"].startswith(
        "every pair is in one group")
    grouped = stats.pairwise_report(np.linspace(0.5, 1, 30), np.linspace(0, 0.5, 30), groups=[i // 5 for i in range(30)],
                                    n_resamples=50)
    dev, test, why = stats.pair_split(30, [i // 5 for i in range(30)], 0.5, 0)
    assert why is None and not {i // 5 for i in dev} & {i // 5 for i in test}
    assert grouped["n_dev"] == dev.size and grouped["split_unit"] == "groups"
