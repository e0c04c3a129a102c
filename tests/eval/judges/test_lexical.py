"""The lexical judge (eval/judges/lexical_judge.py): word overlap is undefined when the side it is a share of has no
content words, so such results are unmeasured with the reason, never a measured 0 (nor "not applicable" because no
claim was found); an empty other side is a measured 0; everything else is as the bare ScorerJudge scores it."""
from __future__ import annotations

import pytest

from corpora.records import Chunk, Trace
from eval.judges.lexical import LexicalScorer
from eval.judges.lexical_judge import NO_CLAIM_WORDS, NO_QUESTION_WORDS, LexicalJudge
from eval.judges.scorer import ScorerJudge

CTX = "The Eiffel Tower is in Paris. It was completed in 1889."
METRICS = ["groundedness", "context_precision", "answer_relevance", "context_recall", "answer_correctness",
           "context_utilisation", "noise_sensitivity"]


def trace(question: str, answer: str, reference: str | None = None, ctx: str = CTX) -> Trace:
    return Trace(sample_id="s", question=question, answer=answer, reference=reference,
                 contexts=[Chunk(chunk_id="s#0", text=ctx, rank=1)])


@pytest.mark.parametrize("metric", ["answer_relevance", "context_precision"])
def test_a_question_without_content_words_is_unmeasured_not_a_zero(metric):
    [r] = LexicalJudge().judge(metric, [trace("Who was it?", "The Eiffel Tower is in Paris.")])
    assert (r.status, r.value, r.reason) == ("unmeasured", None, NO_QUESTION_WORDS)


@pytest.mark.parametrize("metric", ["answer_correctness", "context_utilisation"])
def test_a_reference_claim_without_content_words_is_unmeasured_not_a_verdict(metric):
    """Both values are shares of the reference's claims (found in the answer; in the context): "It is." has no words
    to find. (Noise sensitivity reads the reference as a premise, the answer's claims against it: defined.)"""
    [r] = LexicalJudge().judge(metric, [trace("Where is the tower?", "The Eiffel Tower is in Paris.", "It is.")])
    assert (r.status, r.reason) == ("unmeasured", NO_CLAIM_WORDS)
    assert all(c["verdict"] == "undecided" for c in r.evidence.get("reference_claims", r.evidence.get("claims")))


def test_an_answer_claim_without_content_words_is_unmeasured():
    """A claim without content words is read after the question (eval.claims.standalone); with a question that has
    none either, nothing is left to overlap."""
    [r] = LexicalJudge().judge("groundedness", [trace("Who was it?", "The tower is in Paris. That was it.")])
    assert (r.status, r.reason) == ("unmeasured", NO_CLAIM_WORDS)
    assert [c["verdict"] for c in r.evidence["claims"]] == ["supported", "undecided"]
    [r] = LexicalJudge().judge("groundedness", [trace("Where is it?", "The tower is in Paris. That was it.")])
    assert r.status == "ok"  # "Where is it? That was it." has a word to look for


def test_an_empty_other_side_is_a_measured_zero():
    [r] = LexicalJudge().judge("answer_relevance", [trace("Where is the Eiffel Tower?", "It is there.")])
    assert (r.status, r.value) == ("ok", 0.0)  # none of the question's words is in the answer


def test_every_other_result_is_the_plain_scorer_judges():
    plain, judge = ScorerJudge(LexicalScorer(), config_id="lexical:v1"), LexicalJudge()
    traces = [trace("Where is the Eiffel Tower?", "The Eiffel Tower is in Paris.", "The Eiffel Tower is in Paris."),
              trace("When was the Eiffel Tower completed?", "It was completed in 1925.", "It was completed in 1889.")]
    for m in METRICS:
        assert [r.model_dump() for r in judge.judge(m, traces)] == [r.model_dump() for r in plain.judge(m, traces)], m
    assert judge.config_id == "lexical:v1" and (judge.name, judge.family) == ("lexical", "lexical")
