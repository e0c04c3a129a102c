"""answer_relevance's rules and computation on hand-made traces (eval/metrics/answer_relevance.py)."""
from eval.metrics import get
from tests.eval.metrics.records import strict, trace

METRIC = get("answer_relevance")
REFUSAL = "I don't know based on the provided documents."


def test_rules():
    assert METRIC.fixed(trace(outcome="blocked"), "j").status == "not_applicable"
    assert METRIC.fixed(trace("  "), "j").reason == "empty answer"
    for wordless in ("...", "[kv#0]", "[1][2]"):  # a citation mark alone says nothing ("[kv#0]" was 0.333)
        assert METRIC.fixed(trace(wordless), "j").reason == "the answer has no words to check", wordless
    assert METRIC.fixed(trace(REFUSAL, reference=None), "j").status == "unmeasured"  # no label says answerable
    assert METRIC.fixed(trace(REFUSAL, metadata={"kind": "unanswerable"}), "j").value == 1.0
    assert METRIC.fixed(trace(REFUSAL), "j").value == 0.0  # the reference answers it


def test_the_judges_relevance_clipped_to_the_unit_interval():
    (r,) = strict().judge("answer_relevance", [trace()])
    assert 0.0 < r.value <= 1.0
