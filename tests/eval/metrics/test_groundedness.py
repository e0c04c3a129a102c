"""groundedness's rules and computation on hand-made traces (eval/metrics/groundedness.py)."""
import pytest

from corpora.records import Chunk, Trace
from eval.judges.scorer import ScorerJudge
from eval.metrics import get
from tests.eval.metrics.records import CUR, OLD, QUESTION, Reading, strict, trace

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


def test_a_bare_yes_no_is_read_after_its_question():
    """"Yes." says nothing alone; read after its question it is a claim the context can support or not."""
    (r,) = strict().judge("groundedness", [trace("Yes.", contexts=[CUR])])
    assert r.evidence["claims"][0]["claim"] == f"{QUESTION} Yes."
    (r,) = strict().judge("groundedness", [trace("16 tokens.", contexts=[CUR])])
    assert r.evidence["claims"][0]["claim"] == "16 tokens."


@pytest.mark.model
def test_bare_yes_no_with_the_real_judge():
    """With the shipped judge: "Yes." to a question its context affirms is grounded; "No." is not (the polarity rule
    overrides a judge that reads the question's words and not the one word after them)."""
    from eval.judges.registry import JudgeOptions, make_judge

    judge = make_judge("nli", JudgeOptions())
    ctx = [Chunk(chunk_id="fa#0", doc_id="fa", rank=1,
                 text="FlashAttention is exact: it computes the same result as standard attention.")]
    ask = lambda answer: Trace(sample_id="y", question="Is FlashAttention exact?", answer=answer,  # noqa: E731
                               contexts=ctx)
    (yes,) = judge.judge("groundedness", [ask("Yes.")])
    (no,) = judge.judge("groundedness", [ask("No.")])
    assert yes.value == 1.0, yes.evidence
    assert no.value == 0.0 and "polarity" in no.evidence["claims"][0]["note"], no.evidence


def test_after_a_yes_no_question_a_claim_is_read_without_its_yes_or_no_and_shown_as_written():
    """'Yes, it is exact.' is read as 'It is exact.' (a learned judge reads 'Yes,' as a word the chunk lacks); a bare
    'Yes.' is still read after the question; the evidence shows each claim as the answer wrote it, a bare one after
    its question as before."""
    scorer = Reading()
    q = "Is FlashAttention exact?"
    chunks = [Chunk(chunk_id="fa#0", doc_id="fa", rank=1, text="FlashAttention is exact.")]
    traces = [Trace(sample_id=s, question=q, answer=a, contexts=chunks) for s, a in (("a", "Yes, it is exact."),
                                                                                  ("b", "Yes."))]
    r, bare = ScorerJudge(scorer).judge("groundedness", traces)
    assert {c for _, c in scorer.read} == {"It is exact.", f"{q} Yes."}
    assert [c["claim"] for c in r.evidence["claims"]] == ["Yes, it is exact."]
    assert [c["claim"] for c in bare.evidence["claims"]] == [f"{q} Yes."]
