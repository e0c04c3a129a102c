"""Yes/no questions and answers (eval/yes_no.py): pure functions."""
from eval.yes_no import asks_yes_no, bare_answer, leading_polarity, short_answer, without_answer_word


def test_without_answer_word_drops_an_opening_yes_or_no_only_before_a_statement():
    assert without_answer_word("Yes, it is exact.") == "It is exact."
    assert without_answer_word("No; keep it within one node.") == "Keep it within one node."
    assert without_answer_word("Correct: the weights stay frozen.") == "The weights stay frozen."
    assert without_answer_word("Definitely not, it changes nothing.") == "It changes nothing."
    for same in ("No, it isn't.", "Yes.", "No one uses it.", "Yesterday it shipped.", "Nobody knows.",
                 "The answer is yes, it is exact.", "Right now it is 16.", "Yes, both.", "No, since v0.3."):
        assert without_answer_word(same) == same, same
    # a yes or no with a few words that say nothing alone is read after its question, as a bare one is
    assert short_answer("Yes, both.") and short_answer("No, since v0.3.")
    assert not any(short_answer(t) for t in ("Yes.", "No, it isn't.", "Yes, they are both American.", "Both."))


def test_asks_yes_no_is_an_auxiliary_first_question_without_alternatives():
    for q in ("Is FlashAttention exact?", "Does LoRA freeze the base weights?", "Can't it run on a CPU?",
              "Is it supported or not?", "  should a TP group span two nodes, and what degree is recommended?"):
        assert asks_yes_no(q), q
    for q in ("What is the default block size?", "Is it FP8 or FP16?", "Which is faster, vLLM or TGI?", ""):
        assert not asks_yes_no(q), q


def test_a_bare_answer_is_only_a_yes_or_no_and_its_leading_polarity_is_read():
    assert bare_answer("Yes.") and bare_answer("No, it isn't.") and bare_answer("Definitely not.")
    assert not bare_answer("Yes, it is exact.") and not bare_answer("16 tokens.")
    assert [leading_polarity(t) for t in ("Yes, it is.", "Nope.", "Correct.", "Right now it is 16.")] == [
        "yes", "no", "yes", None]


def test_a_no_that_affirms_is_a_yes_and_one_that_answers_nothing_is_none():
    # "No doubt" and "No question" affirm; a comparison or a concession opened by "no" answers nothing
    assert [leading_polarity(t) for t in ("No doubt, it is exact.", "Without a doubt.", "No question: it is faster.",
                                          "No problem.")] == ["yes"] * 4
    for t in ("No more than 8 GPUs.", "No later than v2.0.", "No fewer than two replicas.", "No matter the size, use 128."):
        assert leading_polarity(t) is None and without_answer_word(t) == t, t
    # a "no" that negates what follows still answers no ("Is it still supported?" "No longer.")
    assert [leading_polarity(t) for t in ("No one uses it.", "No longer.", "No GPU is needed.")] == ["no"] * 3
    assert without_answer_word("No doubt, it is exact.") == "It is exact."
    assert bare_answer("No doubt.") and bare_answer("Without a doubt, yes.") and not bare_answer("No doubt, it is exact.")


def test_other_common_answers_and_a_mixed_one():
    assert [leading_polarity(t) for t in ("Of course.", "Of course, it is exact.", "Sure.", "Affirmative.")] == ["yes"] * 4
    assert [leading_polarity(t) for t in ("Never.", "Negative.", "No way.", "Of course not.")] == ["no"] * 4
    assert [leading_polarity(t) for t in ("Yes and no.", "Yes or no?", "Never use it.", "Of course it is.")] == [None] * 4
    assert bare_answer("Never.") and bare_answer("Of course.") and bare_answer("No way.")
    # the whole answer phrase is dropped, not its first word
    assert without_answer_word("No way, it is approximate.") == "It is approximate."
    assert without_answer_word("Of course, it is exact.") == "It is exact."
