"""answer_correctness's rules and computation on hand-made traces (eval/metrics/answer_correctness.py)."""
from eval.metrics import get
from tests.eval.metrics.records import strict, trace

METRIC = get("answer_correctness")
REFUSAL = "I don't know based on the provided documents."


def test_refusal_rules():
    right = METRIC.fixed(trace(REFUSAL, reference=None, metadata={"kind": "unanswerable"}), "j")
    assert right.value == 1.0 and right.evidence["note"] == "correct refusal"
    missed = METRIC.fixed(trace("It is 16.", metadata={"kind": "unanswerable"}), "j")
    assert missed.value == 0.0 and missed.evidence["note"].startswith("missed refusal")
    wrong = METRIC.fixed(trace(REFUSAL), "j")
    assert wrong.value == 0.0 and wrong.evidence["note"].startswith("wrong refusal")


def test_other_rules():
    assert METRIC.fixed(trace(outcome="blocked"), "j").status == "not_applicable"
    assert METRIC.fixed(trace(reference=None), "j").reason == "no reference answer"
    assert METRIC.fixed(trace(reference=" ", relevant_doc_ids=["cur"]), "j").reason == "no reference answer"
    assert METRIC.fixed(trace(""), "j").status == "unmeasured"


def test_claim_level_f1_with_precision_and_recall():
    (r,) = strict().judge("answer_correctness", [trace()])
    assert r.evidence["precision"] == 1.0 and r.evidence["recall"] == 0.5 and abs(r.value - 2 / 3) < 1e-9
