import math

import pytest

from rag.fusion import aggregate_documents, interpolate, normalise, reciprocal_rank_fusion, weighted_fusion


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
    assert fused["b"] == pytest.approx(2 / 12)  # the repeat takes no rank: b is second


def test_rrf_rejects_bad_arguments():
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([["a"]], k=0)
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([["a"], ["b"]], weights=[1.0])


def test_normalise_minmax_and_zscore():
    assert normalise([2.0, 4.0, 3.0]) == pytest.approx([0.0, 1.0, 0.5])
    z = normalise([1.0, 2.0, 3.0], "zscore")
    assert z == pytest.approx([-1.224744871, 0.0, 1.224744871]) and sum(z) == pytest.approx(0.0)
    assert normalise([5.0, 5.0]) == [1.0, 1.0] and normalise([5.0, 5.0], "zscore") == [0.0, 0.0]
    assert normalise([]) == []
    with pytest.raises(ValueError, match="unknown normalisation"):
        normalise([1.0], "rank")


def test_weighted_fusion_is_a_convex_combination_of_normalised_scores():
    dense = [("a", 0.9), ("b", 0.5), ("c", 0.1)]  # min-max: a 1, b 0.5, c 0
    bm25 = [("c", 30.0), ("a", 10.0)]  # min-max: c 1, a 0; b missing -> this list's floor, 0
    fused = dict(weighted_fusion([dense, bm25], [3.0, 1.0]))  # weights scaled to 0.75 / 0.25
    assert fused == pytest.approx({"a": 0.75, "b": 0.375, "c": 0.25})
    # the raw scale does not matter: BM25 scores x1000 fuse the same
    assert dict(weighted_fusion([dense, [(d, s * 1000) for d, s in bm25]], [3.0, 1.0])) == pytest.approx(fused)
    # a missing id gets the list's lowest z-score, not 0 (which would sit mid-scale)
    z = dict(weighted_fusion([dense, bm25], [0.0, 1.0], "zscore"))
    assert z["b"] == pytest.approx(z["a"]) == pytest.approx(-1.0)


def test_weighted_fusion_order_ties_and_errors():
    out = weighted_fusion([[("x", 1.0), ("y", 1.0)], [("y", 2.0), ("x", 2.0)]])  # all tie at 1.0
    assert [d for d, _ in out] == ["x", "y"]  # best position (both 0), then id
    assert [d for d, _ in weighted_fusion([[("a", 1.0), ("a", 0.0), ("b", 0.5)]])] == ["a", "b"]  # repeat counts once
    with pytest.raises(ValueError, match="one weight per list"):
        weighted_fusion([[("a", 1.0)]], [0.5, 0.5])
    with pytest.raises(ValueError, match="non-negative"):
        weighted_fusion([[("a", 1.0)], [("b", 1.0)]], [0.0, 0.0])


def test_interpolate_between_first_stage_and_reranker():
    first, second = [10.0, 5.0, 0.0], [-2.0, 4.0, 1.0]  # norm: [1, .5, 0] and [0, 1, .5]
    assert interpolate(first, second, 0.0) == pytest.approx([1.0, 0.5, 0.0])
    assert interpolate(first, second, 1.0) == pytest.approx([0.0, 1.0, 0.5])
    assert interpolate(first, second, 0.25) == pytest.approx([0.75, 0.625, 0.125])
    with pytest.raises(ValueError, match="weight must be in"):
        interpolate(first, second, 1.5)
    with pytest.raises(ValueError, match="one second score"):
        interpolate(first, second[:2], 0.5)


def test_aggregate_documents_max_and_sum_of_best_chunks():
    hits = [("d1", 0.9), ("d2", 0.8), ("d2", 0.7), ("d3", 0.2), ("d2", 0.1)]
    best = aggregate_documents(hits)
    assert [d for d, _ in best] == ["d1", "d2", "d3"] and [s for _, s in best] == pytest.approx([0.9, 0.8, 0.2])
    summed = aggregate_documents(hits, "sum2")
    assert [d for d, _ in summed] == ["d2", "d1", "d3"] and [s for _, s in summed] == pytest.approx([1.5, 0.9, 0.2])
    assert dict(aggregate_documents(hits, "sum3"))["d2"] == pytest.approx(1.6)
    assert [d for d, _ in aggregate_documents([("b", 1.0), ("a", 1.0)])] == ["b", "a"]  # ties: first chunk's order
    with pytest.raises(ValueError, match="unknown aggregation"):
        aggregate_documents(hits, "mean")


def test_rerank_order_pure_and_interpolated():
    from rag.reranker import rerank_order

    assert rerank_order([3.0, 2.0, 1.0], [0.1, 5.0, 2.0], 1.0) == ([1, 2, 0], [5.0, 2.0, 0.1])
    order, scores = rerank_order([3.0, 2.0, 1.0], [0.1, 5.0, 2.0], 0.0)
    assert order == [0, 1, 2] and scores == pytest.approx([1.0, 0.5, 0.0])
    assert rerank_order([1.0, 1.0], [2.0, 2.0], 1.0)[0] == [0, 1]  # ties keep the first stage's order


def test_a_lone_keyword_match_still_counts_in_score_fusion():
    """BM25 keeps only hits scoring above 0, so a rare keyword gives one hit; normalised on its own it would be level
    with every id it did not return (min-max 1.0 = floor, z-score 0.0 = floor) and the fusion would be dense alone."""
    dense = [("solar", .40), ("nuclear", .32), ("battery", .20), ("wind", .17)]
    for how in ("zscore", "minmax"):
        fused = weighted_fusion([dense, [("nuclear", .94)]], [.5, .5], how)
        assert fused[0][0] == "nuclear", (how, fused)
        alone = dict(weighted_fusion([dense, []], [.5, .5], how))
        tied = dict(weighted_fusion([dense, [("nuclear", 3.0), ("wind", 3.0)]], [.5, .5], how))
        gain = {d: (tied[d] - tied["solar"]) - (alone[d] - alone["solar"]) for d in ("nuclear", "wind", "battery")}
        assert gain["nuclear"] == pytest.approx(gain["wind"]) and gain["wind"] > 0 and gain["battery"] == 0, gain


def test_score_fusion_normalises_a_list_without_its_repeats_and_weights_must_be_finite():
    assert weighted_fusion([[("a", 1.0), ("a", 0.0), ("b", 0.5)]]) == [("a", 1.0), ("b", 0.0)]
    for bad in ([-1.0, 1.0], [math.inf, 1.0], [math.nan, 1.0], [0.0, 0.0]):
        with pytest.raises(ValueError, match="finite, non-negative"):
            weighted_fusion([[("a", 1.0)], [("b", 1.0)]], bad)
        with pytest.raises(ValueError, match="finite, non-negative"):
            reciprocal_rank_fusion([["a"], ["b"]], weights=bad)
