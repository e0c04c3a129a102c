"""The exact facts answer correctness checks (eval/metrics/key_facts.py): pure functions."""
import pytest

from eval.metrics.key_facts import identifiers, leading_polarity, missing_facts, polarity_conflict


def test_identifiers_are_words_with_digits_or_mixed_case_not_acronyms_or_names():
    assert identifiers("Use E4M3 for FP8 on H100 with vLLM and GPT-4; the GPU in Paris, 4-bit, 16GB") == {
        "e4m3", "fp8", "h100", "vllm", "16gb"}


def test_missing_facts_normalises_numbers_case_spaces_and_hyphens():
    assert missing_facts("It needs 1,024 MB and 16GB on an H100.", "1024 mb, 16 GB, h-100") == []
    assert missing_facts("The default is 64.", "The default is 128.") == ["64"]
    assert missing_facts("Twelve layers.", "It has 12 layers.") == []
    assert missing_facts("Use E5M2.", "Use E4M3.", question="E5M2 or E4M3?") == []


def test_leading_yes_no():
    assert leading_polarity("  Yes, it does.") == "yes"
    assert leading_polarity("No; keep it.") == "no"
    assert leading_polarity("Nobody knows.") is None and leading_polarity("It is yes.") is None
    assert polarity_conflict("Yes.", "No, never.") and not polarity_conflict("No.", "no")
    assert not polarity_conflict("Yes.", "It spans two nodes.")


def test_polarity_mismatch_of_a_bare_yes_no():
    from eval.metrics.key_facts import polarity_mismatch

    q = "Is FlashAttention exact?"
    affirm, deny = "FlashAttention is exact.", "FlashAttention is not exact."
    assert not polarity_mismatch(f"{q} Yes.", q, affirm) and polarity_mismatch(f"{q} Yes.", q, deny)
    assert polarity_mismatch(f"{q} No.", q, affirm) and not polarity_mismatch(f"{q} No, it is not.", q, deny)
    assert not polarity_mismatch("FlashAttention is exact.", q, deny)  # not a bare yes/no: the judge decides
    neg_q = "Is FlashAttention not exact?"
    assert polarity_mismatch(f"{neg_q} Yes.", neg_q, affirm) and not polarity_mismatch(f"{neg_q} No.", neg_q, affirm)


def test_versions_addresses_and_identifiers_are_compared_whole():
    assert missing_facts("The fix shipped in version 2.1.5.", "The fix shipped in version 2.1.0.") == ["2.1.5"]
    assert missing_facts("The server listens on 10.0.0.2.", "The server listens on 10.0.0.1.") == ["10.0.0.2"]
    assert missing_facts("It requires Python 3.1.", "It requires Python 3.10.") == ["3.1"]
    assert missing_facts("It runs on an H100.", "It runs on an H1000.") == ["h100"]
    assert missing_facts("Use v2.1.0.", "Use v2.1.05 or later.") == ["v2.1.0"]
    assert missing_facts("Use v2.1.0.", "Use v2.1.0.") == [] and missing_facts("An H100 card.", "H100 80GB") == []
    assert missing_facts("It needs 16GB.", "It needs 1 16 GB card.") == []


# --- a number written another way is the same fact; a different number is still missing ------------------------
@pytest.mark.parametrize("claim,other", [
    ("The context window is 128 000 tokens.", "The context window is 128,000 tokens."),
    ("The context window is 128\u00a0000 tokens.", "The context window is 128000 tokens."),
    ("The context window is 128\u202f000 tokens.", "The context window is 128K tokens."),
    ("The context window is 128k tokens.", "The context window is 128 000 tokens."),
    ("It needs 1,024MB.", "It needs 1024 MB."),
    ("It costs $1.5M.", "It costs 1.5 million dollars."),
    ("The dropout is 0,1.", "The dropout is 0.1."),
    ("It supports batch sizes 1,2,4,8.", "Batch sizes 1, 2, 4 and 8 work."),
    ("显存约占2 GB。", "It takes 2 GB of memory."),
    ("H100显卡有80GB。", "An H100 has 80GB."),
    ("It shipped on 15.03.2023.", "It shipped on March 15, 2023."),
    ("It shipped on the 15th of March 2023.", "It shipped on 2023-03-15."),
    ("The low was \u22123 degrees.", "The low was -3 degrees."),
    ("Use f\u200bp16 weights.", "Use FP16 weights."),
    ("Use E4\u00adM3.", "Use E4M3."),
])
def test_a_number_or_identifier_written_another_way_is_stated(claim, other):
    assert missing_facts(claim, other) == []


@pytest.mark.parametrize("claim,other,missing", [
    ("It has 1,048,580 tokens.", "It has 1,048,576 tokens.", ["1048580"]),
    ("It has 1 048 580 tokens.", "It has 1,048,576 tokens.", ["1 048 580"]),  # neither reading is stated
    ("It shipped in 2023.", "It shipped in 2024.", ["2023"]),
    ("It holds 1.5k rows.", "It holds 1.6k rows.", ["1500"]),
    ("It holds 128k rows.", "It holds 128 rows.", ["128000"]),
    ("It requires Python 3.10.", "It requires Python 3.1.", ["3.10"]),
    ("It shipped on 15.03.2023.", "It shipped on March 16, 2023.", ["2023-03-15"]),
    ("It shipped on 03/04/2023.", "It shipped on 2023-03-05.", ["03/04/2023"]),  # neither reading is stated
    ("显存约占2 GB。", "It takes 3 GB.", ["2 GB"]),  # a number with a unit is shown with it
    ("in 2023 100 people came", "2023100 people came", ["100", "2023"]),
])
def test_a_different_number_is_still_missing(claim, other, missing):
    assert missing_facts(claim, other) == missing


def test_cjk_text_and_numbers_are_no_identifiers():
    assert identifiers("显存约占2 GB，H100显卡") == {"h100"}
    assert identifiers("約2時間、第3章、사과 3개") == set()
    assert identifiers("a 128k context, a 7B model, 1.5M rows, the 15th run, 2bn tokens") == set()
    assert identifiers("f\u200bp16 on an H\u200d100, 1,024MB") == {"fp16", "h100", "1024mb"}
    assert missing_facts("Use the 7B model.", "Use the 8B model.") == ["7000000000"]  # a magnitude: a number


def test_other_bare_answers_open_with_a_polarity_and_a_contrast_does_not_negate():
    from eval.metrics.key_facts import states_negation

    for text, want in (("Correct.", "yes"), ("Nope.", "no"), ("Definitely not.", "no"), ("Not really.", "no"),
                       ("Wrong, it is 64.", "no"), ("Right now it is 5.", None), ("True positives are rare.", None),
                       ("Nobody knows.", None)):
        assert leading_polarity(text) == want, text
    q = "Is FP8 supported on the A100?"
    assert states_negation("FP8 is not supported on the A100.", q)
    assert states_negation("FP8 is supported on the H100, not the A100.", q)  # excludes what was asked
    assert not states_negation("FP8 is supported on the H100, not the A100.", "Is FP8 supported on the H100?")
    assert not states_negation("FP8 is supported on the H100 but not the A100.", "Is FP8 supported on the H100?")
    assert states_negation("It does not work, not even on the H100.", "Does it work?")


@pytest.mark.parametrize("claim,other,missing", [
    ("It needs 64 MB.", "It needs 64 KB.", ["64 MB"]),  # was []: the number 64 was all that was compared
    ("It needs 64MB.", "It needs 64 KB.", ["64 MB"]),  # said once, as the number
    ("It needs 2GB.", "It needs 2048 MB.", []), ("It needs 64KB.", "It needs 64 kilobytes.", []),
    ("It took 1.5 hours.", "It took 90 minutes.", []), ("It took 90min.", "It took 1.5 hours.", []),
    ("It needs 16GB.", "It uses 16 nodes with 32GB.", ["16gb"]),  # glued: a bare 16 does not state it
    ("It needs 16 GB.", "It comes in 16 or 32 GB.", []),
    ("It has 1.234.567 users.", "It has 1,234,567 users.", []), ("It shipped on 03/15/23.", "It shipped 2023-03-15.", []),
])
def test_units_group_marks_and_short_years(claim, other, missing):
    assert missing_facts(claim, other) == missing


def test_a_duration_glued_in_parts_is_stated_by_the_same_time_written_otherwise():
    assert missing_facts("It took 1h30.", "It took 90 minutes.") == []
    assert missing_facts("It took 1m30s.", "It took 90 s.") == []
    assert missing_facts("It took 1h30.", "It took 2 hours.") == ["1h30"]
    assert missing_facts("It took 1h30m.", "It took 1 hour.") == ["1h30m"]


def test_a_glued_time_of_day_or_informal_size_is_read_in_its_sentence():
    assert missing_facts("We meet at 10h30.", "We meet at 10:30 h.") == []
    assert missing_facts("We meet at 10h30.", "We meet at 10:30.") == []
    assert missing_facts("We meet at 10h30.", "It took 630 minutes.") == ["10h30"]  # a time of day, no duration
    assert missing_facts("It has 16gigs of RAM.", "It has 16 GB of RAM.") == []
    assert missing_facts("It took two hours.", "It took 2 days.") == ["2 hours"]

