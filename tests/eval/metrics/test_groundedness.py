"""groundedness's rules and computation on hand-made traces (eval/metrics/groundedness.py)."""
from corpora.records import Trace
from eval.metrics import get
from tests.eval.metrics.records import OLD, QUESTION, strict, trace

METRIC = get("groundedness")


def test_rules():
    assert METRIC.fixed(trace(outcome="blocked"), "j").status == "not_applicable"
    assert METRIC.fixed(trace(""), "j").reason == "empty answer: no claims to check"
    assert METRIC.fixed(trace("..."), "j").reason == "the answer has no words to check as claims"
    refusal = METRIC.fixed(trace("I don't know based on the provided documents."), "j")
    assert refusal.value == 1.0 and refusal.evidence["refusal"]
    assert METRIC.fixed(trace(contexts=[]), "j").value == 0.0
    assert METRIC.fixed(Trace(sample_id="x", question=QUESTION, answer="It is 16."), "j").reason == \
        "no contexts in the input record"
    assert METRIC.fixed(trace(), "j") is None


def test_share_of_supported_claims_with_the_chunk_and_sentence():
    (r,) = strict().judge("groundedness", [trace("The default block size is 32 tokens. It runs on the moon.",
                                                 contexts=[OLD])])
    assert r.value == 0.5
    first, second = r.evidence["claims"]
    assert first["verdict"] == "supported" and first["chunk_id"] == "old#0" and "32 tokens" in first["sentence"]
    assert second["verdict"] == "unsupported"
    assert METRIC.cut == 0.75 and METRIC.ragas == "Faithfulness"
