"""eval/judges/verdicts.py: a judge's reply gives a verdict only when it says one plainly. Whole words, not letters
inside words; the prompt's own option lists and questions echoed back are no verdict; conflicting verdicts, refusals
and unfinished reasoning are undecided (None); JSON is read by key and value."""
from __future__ import annotations

import pytest

from eval.judges.base import Support
from eval.judges.verdicts import parse_relevance, parse_support, without_reasoning

YES, NO, CONTRA = Support(1.0, 0.0), Support(0.0, 0.0), Support(0.0, 1.0)


@pytest.mark.parametrize(("reply", "verdict"), [
    # the audit's replies, each read wrongly before (the old reading in the comment)
    ("I'm sorry, but I cannot help with that.", None),  # NO: the "no" in "cannot"
    ("I don't know.", None),  # NO
    ("Based on my knowledge, the statement is supported.", YES),  # NO: the "no" in "knowledge"
    ("Noted. YES.", YES),  # NO: "Noted"
    ("eyes", None),  # YES
    ("YES or NO: NO", NO),  # YES: the option list echoed
    ("Is the statement true according to the premise? No.", NO),  # YES: the question echoed
    ('{"supported": false}', NO),  # YES: the key
    ('{"is_supported": 0}', NO),  # YES
    ("Partially supported", NO),  # YES
    ("I cannot tell", None),  # NO
    # refusals and non-answers
    ("I cannot determine this from the premise.", None), ("As an AI, I can't say.", None),
    ("I do not have enough information to answer.", None),
    # conflicting verdicts are undecided; a negative with a contradiction is a contradiction
    ("There is no evidence; yes it is supported? Actually No.", None), ("Yes. No.", None),
    ("No, the statement is false.", CONTRA), ("NOT_SUPPORTED; in fact contradicted", CONTRA),
    # the 3-way option list and question echoed back
    ("SUPPORTED, CONTRADICTED or NOT_SUPPORTED: CONTRADICTED", CONTRA),
    ("Does the premise support the statement? Reply SUPPORTED, CONTRADICTED or NOT_SUPPORTED.", None),
    ("Statement: The tower is in Paris. Is the statement true according to the premise?", None),
    # negation and hedges, within a clause
    ("The premise does not entail the statement.", NO), ("The statement isn't supported by the premise.", NO),
    ("Not true.", NO), ("It is not false.", None), ("No contradiction.", None), ("Probably supported", None),
    ("The statement is partly true.", NO), ("The statement cannot be verified from the premise", NO),
    # JSON: bare, fenced, embedded; by key and value, never the words of a reason
    ('{"verdict": "yes"}', YES), ('```json\n{"verdict": "NO"}\n```', NO), ('{"answer": "unsupported"}', NO),
    ('{"score": "0"}', NO), ('{"score": 1.0}', YES), ('{"label": "entailment"}', YES),
    ('Here it is: {"reason": "the premise supports it", "verdict": "NOT_SUPPORTED"}', NO),
    ('{"reason": "It says so.", "supported": true}', YES), ('{"hallucinated": true}', NO),
    ('{"hallucinated": false}', YES), ('{"contradicted": true}', CONTRA), ('{"not_supported": "yes"}', NO),
    ('{"supported": true, "contradicted": true}', None), ('{"result": {"is_supported": "no"}}', NO),
    ('{"reason": "no idea what to say"}', None), ("1", YES), ("0", NO),
    # reasoning blocks: closed ones are dropped, an unclosed one is a reply cut off mid-reasoning
    ("<think>It says yes, so true.</think>\n\nNO", NO), ("the premise says yes</think> NO", NO),
    ("<think>\nOkay, I need to check whether the statement is true", None),
    # idioms: "no doubt" affirms, an emphatic "not" that ends its clause denies
    ("No doubt, it is supported.", YES), ("Without a doubt, yes.", YES), ("No question, the statement is true.", YES),
    ("Absolutely not.", NO), ("Of course not, the premise says 64.", NO), ("Not at all.", NO),
    ("Definitely not supported.", NO), ("No doubt.", None), ("It is certainly not false.", None),
    # a whole reply of yes or no in another language; inside a longer reply such words are not read
    ("Oui.", YES), ("Nein", NO), ("是", YES), ("いいえ。", NO), ("Sí", YES), ("Non.", NO),
    ("Ja, das stimmt.", None), ("Si the premise", None),
])
def test_support_replies(reply, verdict):
    assert parse_support(reply) == verdict


@pytest.mark.parametrize(("reply", "verdict"), [
    ('{"relevant": false}', 0.0), ('{"is_relevant": true}', 1.0), ('{"irrelevant": true}', 0.0),
    ("I cannot tell", None), ("Notably, yes", 1.0), ("Partially relevant", None), ("No, irrelevant", 0.0),
    ("Irrelevant? No, it is relevant.", None), ("The passage is not helpful", 0.0), ("know", None),
    ("Does the passage contain information that helps answer the question? Yes", 1.0), ("YES or NO: YES", 1.0),
    ("Nothing here.", None),
    # how models answer at length: the negation reaches the verb's object within its clause
    ("No, the passage does not contain any information that helps answer the question.", 0.0),
    ("Yes, the passage contains information that helps answer the question.", 1.0),
    ("The passage cannot help answer the question.", 0.0), ("I cannot help with that.", None),
    ("No doubt about it: the passage is relevant.", 1.0), ("Absolutely not.", 0.0), ("Oui", 1.0), ("Nein.", 0.0),
])
def test_relevance_replies(reply, verdict):
    assert parse_relevance(reply) == verdict


def test_a_quoted_text_is_no_verdict_but_a_short_one_may_be():
    statement = "There is no tower in Paris."
    assert parse_support(f"Statement: {statement}") == NO  # read as words when the parser is not told it was quoted
    assert parse_support(f"Statement: {statement}", ("The premise.", statement)) is None
    assert parse_support(f"{statement}\nYES", ("The premise.", statement)) == YES
    assert parse_support("Yes.", ("premise text here", "Yes.")) == YES  # too short to be taken for an echo


def test_without_reasoning():
    assert without_reasoning("<think>a</think>b").strip() == "b" and without_reasoning("a</think> b").strip() == "b"
    assert without_reasoning("<think>a") is None and without_reasoning("plain") == "plain"


def test_not_only_is_more_and_deep_nesting_or_long_blank_runs_are_read_safely():
    import time

    from eval.judges.verdicts import parse_relevance, parse_support

    for more in ("Not only is it supported, but it is also explicitly stated.",
                 "It doesn't just support the statement, it states it word for word.",
                 "The premise does not merely support the statement; it states it verbatim."):
        assert parse_support(more).supported == 1.0, more
    assert parse_relevance("Not only relevant but essential.") == 1.0
    assert parse_support("It is not supported.").supported == 0.0
    assert parse_support("[" * 1000) is None  # RecursionError in the JSON decoder: no verdict, no crash
    start = time.perf_counter()
    assert parse_support("Yes" + "\n" * 50_000).supported == 1.0
    assert time.perf_counter() - start < 1.0
