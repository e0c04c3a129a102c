import math

import numpy as np
import pytest

from eval.mathx import average_precision, bootstrap_ci, claim_prf, cosine_to_unit, f1, fraction


@pytest.mark.parametrize("verdicts, total, expected", [
    ([1, 0, 1], None, (1 / 1 + 2 / 3) / 2),
    ([0, 1, 1], None, (1 / 2 + 2 / 3) / 2),
    ([1, 1, 0], None, 1.0),
    ([0, 0, 0], None, 0.0),
    ([], None, 0.0),
    ([1, 0, 0], 2, 0.5),  # one of two relevant items found, at rank 1
    ([0.9, 0.2, 0.7], None, (1 + 2 / 3) / 2),  # scores thresholded at 0.5
])
def test_average_precision(verdicts, total, expected):
    assert average_precision(verdicts, total) == pytest.approx(expected)


def test_ap_rewards_relevant_items_ranked_first():
    assert average_precision([1, 1, 0, 0]) > average_precision([0, 0, 1, 1])


def test_claim_prf():
    out = claim_prf([True, True, False, False], [True, False])
    assert out["precision"] == 0.5 and out["recall"] == 0.5 and out["f1"] == pytest.approx(0.5)
    out = claim_prf([True], [True, True, True, False])
    assert out["f1"] == pytest.approx(2 * 1 * 0.75 / 1.75)
    assert claim_prf([], [True])["f1"] is None
    assert f1(0.0, 0.0) == 0.0
    assert fraction([]) is None


def test_bootstrap_ci_contains_mean_and_is_deterministic():
    rng = np.random.default_rng(1)
    x = rng.uniform(size=200)
    lo, hi = bootstrap_ci(x)
    assert lo < x.mean() < hi
    assert (lo, hi) == bootstrap_ci(x)
    assert hi - lo < 0.12
    assert bootstrap_ci([0.7]) == (0.7, 0.7)
    assert all(math.isnan(v) for v in bootstrap_ci([]))
    narrow = bootstrap_ci(np.r_[x, x, x, x])
    assert narrow[1] - narrow[0] < hi - lo


def test_cosine_to_unit():
    assert cosine_to_unit(-0.3) == 0.0 and cosine_to_unit(0.4) == 0.4 and cosine_to_unit(1.2) == 1.0


def test_premise_windows_lead_every_window_and_never_stand_alone():
    from eval.claims import premise_windows, sentence_windows
    text = "The bucket is 25 MB. It overlaps compute. Tuning helps."
    assert premise_windows(text) == sentence_windows(text)
    led = premise_windows(text, "  What is the bucket size?  ")
    assert led == ["What is the bucket size? " + w for w in sentence_windows(text)]
    assert premise_windows("25 MB", "Q?") == ["Q? 25 MB"] and premise_windows("", "Q?") == []


def test_mean_ci_never_claims_certainty_from_few_or_equal_values():
    from eval.mathx import mean_ci, wilson_interval

    lo, hi = mean_ci([0.7])  # one value: the bootstrap's interval is the value itself
    assert lo < 0.2 and hi > 0.95
    assert mean_ci([1.0] * 30) == wilson_interval(30, 30) and mean_ci([1.0] * 30)[0] < 0.9
    assert mean_ci([0.0, 0.0]) == wilson_interval(0, 2)
    x = np.linspace(0.2, 0.8, 40)
    assert mean_ci(x) == bootstrap_ci(x)  # ordinary data: the bootstrap, unchanged


def test_difference_ci_of_equal_paired_differences_is_not_certainty():
    from eval.mathx import difference_ci

    lo, hi = difference_ci([-1.0] * 5)  # five samples that all went from 1 to 0: a likely regression, not [-1, -1]
    assert lo == -1.0 and -0.2 < hi < 0
    x = list(np.linspace(-0.3, 0.5, 40))
    lo, hi = difference_ci(x)
    assert lo < float(np.mean(x)) < hi
