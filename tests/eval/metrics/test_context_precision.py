"""context_precision's rules and computation on hand-made traces (eval/metrics/context_precision.py)."""
from eval.metrics import get
from tests.eval.metrics.records import CUR, NOISE, OLD, strict, trace

METRIC = get("context_precision")


def test_rules():
    assert METRIC.fixed(trace(contexts=[]), "j").reason == "no contexts retrieved"
    assert METRIC.fixed(trace(), "j") is None


def test_rank_aware_precision_against_the_reference_else_the_question():
    (ranked_low,) = strict().judge("context_precision", [trace(contexts=[NOISE.model_copy(update={"rank": 1}),
                                                                         CUR.model_copy(update={"rank": 2})])])
    assert ranked_low.evidence["with_reference"] and ranked_low.value == 0.5  # the one relevant chunk at rank 2
    assert [c["relevant"] for c in ranked_low.evidence["chunks"]] == [False, True]
    (no_ref,) = strict().judge("context_precision", [trace(reference=None, contexts=[CUR, OLD])])
    assert not no_ref.evidence["with_reference"] and no_ref.value == 1.0  # both chunks are about the question
