"""context_utilisation on hand-made traces (eval/metrics/context_utilisation.py): of the reference claims the context
holds, the share the answer makes."""
from eval.metrics import get
from tests.eval.metrics.records import CUR, NOISE, strict, trace

METRIC = get("context_utilisation")


def test_share_of_the_found_reference_claims_the_answer_makes():
    (half,) = strict().judge("context_utilisation", [trace(contexts=[CUR])])
    assert half.value == 0.5 and len(half.evidence["used"]) == 2  # both reference claims are in the chunk
    full = trace("The default block size is 16 tokens. Blocks live in GPU memory.", contexts=[CUR])
    assert strict().judge("context_utilisation", [full])[0].value == 1.0
    refusal = trace("I don't know based on the provided documents.", contexts=[CUR])
    assert strict().judge("context_utilisation", [refusal])[0].value == 0.0  # the context held it; none was used


def test_nothing_to_use_is_not_applicable():
    (r,) = strict().judge("context_utilisation", [trace(contexts=[NOISE])])
    assert r.status == "not_applicable" and "no claim of the reference" in r.reason


def test_rules():
    assert METRIC.fixed(trace(outcome="blocked"), "j").status == "not_applicable"
    assert METRIC.fixed(trace(reference=None), "j").status == "not_applicable"
    for wordless in ("...", "[kv#0]", "[1][2]"):  # unmeasured as groundedness says, not a measured 0
        assert METRIC.fixed(trace(wordless), "j").reason == "the answer has no words to check", wordless
    assert METRIC.fixed(trace(contexts=[]), "j").reason == "no contexts retrieved"
    assert METRIC.fixed(trace(""), "j").reason == "empty answer"
    assert METRIC.higher_is_better and not METRIC.default
