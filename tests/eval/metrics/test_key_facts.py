"""The exact facts answer correctness checks (eval/metrics/key_facts.py): pure functions."""
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
