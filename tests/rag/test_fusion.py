import pytest

from rag.fusion import reciprocal_rank_fusion


def test_rrf_scores_match_formula():
    fused = dict(reciprocal_rank_fusion([["a", "b", "c"], ["b", "a"]], k=60))
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["c"] == pytest.approx(1 / 63)


def test_rrf_order_and_deterministic_ties():
    out = reciprocal_rank_fusion([["a", "b"], ["b", "a"], ["c"]], k=1)
    ids = [d for d, _ in out]
    # a and b tie on score; both have best rank 1, so the id breaks the tie
    assert ids == ["a", "b", "c"]


def test_rrf_item_in_both_lists_beats_item_in_one():
    out = reciprocal_rank_fusion([["x", "shared"], ["shared", "y"]])
    assert out[0][0] == "shared"


def test_rrf_repeated_id_counts_once_and_weights_apply():
    fused = dict(reciprocal_rank_fusion([["a", "a", "b"]], k=10, weights=[2.0]))
    assert fused["a"] == pytest.approx(2 / 11)
    assert fused["b"] == pytest.approx(2 / 13)


def test_rrf_rejects_bad_arguments():
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([["a"]], k=0)
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([["a"], ["b"]], weights=[1.0])
