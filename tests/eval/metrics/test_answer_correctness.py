"""answer_correctness's rules and computation on hand-made traces (eval/metrics/answer_correctness.py)."""
from corpora.records import Trace
from eval.judges.lexical import LexicalScorer
from eval.judges.scorer import ScorerJudge
from eval.metrics import get
from tests.eval.metrics.records import QUESTION, Reading, strict, trace

METRIC = get("answer_correctness")
REFUSAL = "I don't know based on the provided documents."


def test_refusal_rules():
    right = METRIC.fixed(trace(REFUSAL, reference=None, metadata={"kind": "unanswerable"}), "j")
    assert right.value == 1.0 and right.evidence["note"] == "correct refusal"
    missed = METRIC.fixed(trace("It is 16.", metadata={"kind": "unanswerable"}), "j")
    assert missed.value == 0.0 and missed.evidence["note"].startswith("missed refusal")
    wrong = METRIC.fixed(trace(REFUSAL), "j")
    assert wrong.value == 0.0 and wrong.evidence["note"].startswith("wrong refusal")


def test_a_non_answer_is_a_refusal_not_an_answer_the_judge_reads_with_the_question():
    """'N/A' or 'See the documents.' read after the question let a judge answer from what it knows ("What is the
    capital of France? N/A" supported "Paris."): they give no answer, so they are refusals, wrong where the corpus
    holds the answer."""
    for non_answer in ("N/A", "n/a.", "No answer.", "See the documents.", "Please refer to the provided context."):
        r = METRIC.fixed(trace(non_answer), "j")
        assert r.value == 0.0 and r.evidence["note"].startswith("wrong refusal"), non_answer
    assert METRIC.fixed(trace("See the documents: the block size is 16 tokens."), "j") is None  # an answer: judged


def test_other_rules():
    assert METRIC.fixed(trace(outcome="blocked"), "j").status == "not_applicable"
    assert METRIC.fixed(trace(reference=None), "j").reason == "no reference answer"
    assert METRIC.fixed(trace(reference=" ", relevant_doc_ids=["cur"]), "j").reason == "no reference answer"
    assert METRIC.fixed(trace(""), "j").status == "unmeasured"


def test_value_is_the_references_claim_recall_with_precision_and_f1_kept():
    (r,) = strict().judge("answer_correctness", [trace()])
    assert r.evidence["precision"] == 1.0 and r.evidence["recall"] == 0.5 and r.value == 0.5
    assert abs(r.evidence["f1"] - 2 / 3) < 1e-9


def test_an_answer_adding_what_the_reference_does_not_state_is_not_wrong():
    t = trace("The default block size is 16 tokens, and blocks are allocated on demand by the scheduler.",
              reference="The default block size is 16 tokens.")
    (r,) = strict().judge("answer_correctness", [t])
    assert r.value == 1.0, r.evidence


def lenient() -> ScorerJudge:
    """A judge that calls every claim supported: only the exact key-fact rules can make an answer wrong."""
    return ScorerJudge(LexicalScorer(support_threshold=0.0, relevance_threshold=0.5))


def test_a_changed_number_or_identifier_is_wrong_whatever_the_judge_says():
    (same,) = lenient().judge("answer_correctness", [trace("The default block size is 16 tokens in GPU memory.")])
    assert same.value == 1.0
    (number,) = lenient().judge("answer_correctness", [trace("The default block size is 32 tokens.")])
    assert number.value == 0.0
    assert "32" in number.evidence["answer_claims"][0]["note"]
    ident = trace("Use E5M2 for forward-pass weights and activations, and also for gradients.",
                  reference="E4M3 for forward-pass weights and activations, and E5M2 for gradients.")
    (r,) = lenient().judge("answer_correctness", [ident])
    assert r.evidence["precision"] == 1.0 and r.evidence["recall"] == 0.0 and r.value == 0.0
    assert "e4m3" in r.evidence["reference_claims"][0]["note"]


def test_a_number_the_question_gives_is_not_a_missing_fact():
    t = trace("With 4 GPUs the default block size is 16 tokens.", reference="The default block size is 16 tokens.")
    t.question = "With 4 GPUs, what is the default block size?"
    (r,) = lenient().judge("answer_correctness", [t])
    assert r.value == 1.0


def test_an_answer_with_the_opposite_yes_or_no_is_wrong():
    t = trace("Yes, a tensor-parallel group spans two nodes.",
              reference="No; keep tensor parallelism within one node.")
    (r,) = lenient().judge("answer_correctness", [t])
    assert r.value == 0.0 and "yes/no" in r.evidence["note"]
    (agree,) = lenient().judge("answer_correctness", [trace("No, keep it within one node.", reference=t.reference)])
    assert agree.value == 1.0


def test_a_bare_yes_or_no_is_read_after_its_question_against_the_reference():
    """An audit: the lexical judge called 'Yes.' to 'Is FP8 supported on the A100?' correct against 'FP8 is not
    supported on the A100.' (the question supplies every word; the one word after it was never read), and 'Nope.'
    wrong against 'No.' (no word shared)."""
    q = "Is FP8 supported on the A100?"
    ref = "FP8 is not supported on the A100."
    cases = [("Yes.", ref, 0.0), ("Correct.", ref, 0.0), ("No, it isn't.", ref, 1.0), ("Nope.", "No.", 1.0),
             ("Yes.", "No.", 0.0), ("Definitely not.", "No.", 1.0),
             ("Yes.", "FP8 is supported on the H100, not the A100.", 0.0),  # the contrast names what was asked
             ("No doubt.", "No.", 0.0), ("Without a doubt.", "Yes.", 1.0)]  # a "no" that affirms
    for answer, reference, want in cases:
        t = Trace(sample_id="s", question=q, answer=answer, reference=reference, contexts=[])
        (r,) = lenient().judge("answer_correctness", [t])
        assert r.value == want, (answer, reference, r)
    (right,) = lenient().judge("answer_correctness", [Trace(
        sample_id="s", question="Is FP8 supported on the H100?", answer="Yes.", contexts=[],
        reference="FP8 is supported on the H100, not the A100.")])
    # the contrast excludes something the question did not ask about: no polarity overrule (the reference's A100 is
    # still a fact the answer does not state)
    assert "opposite" not in str(right.evidence)


def test_a_yes_no_question_does_not_lead_a_text_that_states_words_of_its_own():
    """'Is FlashAttention exact?' before 'FlashAttention is an approximate attention method.' reads as if the answer
    said 'exact' (the shipped judge found 'Yes, it is exact.' supported at 0.59: answer correctness 1.0 for the wrong
    answer). A yes/no question leads only a text with no word of its own ('Yes, it is.'); any other question leads
    every text, so that a short one ('16 tokens.') reads in context."""
    q = "Is FlashAttention exact?"
    for answer, reference, led in (
            ("FlashAttention is an approximate attention method.", "Yes, it is exact.", {"reference"}),
            ("Yes, it is.", "Yes, FlashAttention computes exact attention.", {"answer"}),
            ("FlashAttention computes exact attention.", "Yes, it needs no approximation.", set())):
        scorer = Reading()
        ScorerJudge(scorer).judge("answer_correctness", [Trace(sample_id="s", question=q, answer=answer,
                                                                reference=reference, contexts=[])])
        premises = [p for p, _ in scorer.read]
        assert premises
        leads = {side for side, text in (("answer", answer), ("reference", reference))
                 if any(p.startswith(q) and text in p for p in premises)}
        assert leads == led, (answer, reference, premises)
    scorer = Reading()
    ScorerJudge(scorer).judge("answer_correctness", [trace("The default block size is 16 tokens.")])
    assert scorer.read and all(p.startswith(QUESTION) for p, _ in scorer.read)  # not a yes/no question: leads all


def test_a_yes_or_no_claim_is_read_without_its_answer_word_and_shown_as_written():
    """After a yes/no question the judge reads "Yes, it is exact." as "It is exact." (the yes/no rules check the word);
    the evidence shows the claim as the reference wrote it."""
    scorer = Reading()
    t = Trace(sample_id="s", question="Is FlashAttention exact?", answer="FlashAttention computes exact attention.",
              reference="Yes, it is exact.", contexts=[])
    (r,) = ScorerJudge(scorer).judge("answer_correctness", [t])
    assert {c for _, c in scorer.read} >= {"It is exact."} and "Yes, it is exact." not in {c for _, c in scorer.read}
    assert [c["claim"] for c in r.evidence["reference_claims"]] == ["Yes, it is exact."]
    scorer = Reading()
    ScorerJudge(scorer).judge("answer_correctness", [trace("Yes, the default block size is 16 tokens.")])
    assert "Yes, the default block size is 16 tokens." in {c for _, c in scorer.read}  # not a yes/no question
