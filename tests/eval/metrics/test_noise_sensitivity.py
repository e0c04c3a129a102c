"""noise_sensitivity on hand-made traces (eval/metrics/noise_sensitivity.py): wrong claims the context supports."""
from corpora.records import Trace
from eval.metrics import get
from tests.eval.metrics.records import NOISE, OLD, QUESTION, strict, trace

METRIC = get("noise_sensitivity")


def test_a_wrong_claim_copied_from_an_irrelevant_chunk_is_noise():
    t = trace("The default block size is 32 tokens. Blocks live in GPU memory.")
    (r,) = strict().judge("noise_sensitivity", [t])
    assert r.value == 0.5  # one of two claims: wrong against the reference, supported by the outdated chunk
    assert r.evidence["irrelevant"] == 0.5 and r.evidence["relevant"] == 0.0
    assert r.evidence["relevant_chunks"] == ["cur#0"]  # the current chunk supports the reference, the old one not
    wrong = next(c for c in r.evidence["claims"] if not c["correct"])
    assert wrong["supported_by"] == ["old#0"] and "32" in wrong["claim"]


def test_a_right_answer_or_an_unsupported_wrong_one_is_no_noise():
    assert strict().judge("noise_sensitivity", [trace()])[0].value == 0.0
    made_up = trace("The default block size is 64 tokens.", contexts=[OLD, NOISE])  # wrong, but not from the context
    assert strict().judge("noise_sensitivity", [made_up])[0].value == 0.0


def test_rules():
    assert METRIC.fixed(trace(outcome="blocked"), "j").status == "not_applicable"
    assert METRIC.fixed(trace(reference=None), "j").status == "not_applicable"
    assert METRIC.fixed(trace(metadata={"kind": "unanswerable"}), "j").status == "not_applicable"
    assert METRIC.fixed(trace("I don't know based on the provided documents."), "j").reason == "a refusal makes no claim"
    assert METRIC.fixed(trace(""), "j").status == "unmeasured"
    assert METRIC.fixed(trace(contexts=[]), "j").value == 0.0  # nothing retrieved: nothing to repeat
    assert METRIC.fixed(Trace(sample_id="x", question=QUESTION, answer="It is 32.", reference="16."), "j").status \
        == "unmeasured"  # the record says nothing about what was retrieved


def test_declared_lower_is_better_and_not_a_default():
    assert not METRIC.higher_is_better and not METRIC.default and METRIC.model
