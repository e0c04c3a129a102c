"""context_recall's rules and computation on hand-made traces (eval/metrics/context_recall.py)."""
from eval.metrics import get
from tests.eval.metrics.records import CUR, OLD, strict, trace

METRIC = get("context_recall")


def test_rules():
    assert METRIC.fixed(trace(reference=None), "j").reason == "no reference answer"
    assert METRIC.fixed(trace(metadata={"answerable": False}), "j").status == "not_applicable"
    assert METRIC.fixed(trace(contexts=[]), "j").value == 0.0


def test_share_of_reference_claims_the_chunks_support():
    assert strict().judge("context_recall", [trace(contexts=[CUR])])[0].value == 1.0
    assert strict().judge("context_recall", [trace(contexts=[OLD])])[0].value == 0.0
