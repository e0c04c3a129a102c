"""The compact judge's model-free features (eval/judges/features.py): hand-made cases for each."""
import math

import pytest

from eval.judges import features as F


@pytest.mark.parametrize("text,expected", [
    ("The group size is 128.", {"128"}),
    ("It costs 1,024 dollars, or 2.50 per unit.", {"1024", "2.5"}),
    ("twelve layers and two heads", {"12", "2"}),
    ("Released in 2019 (version 3.5; v4 is a name).", {"2019", "3.5"}),
    ("no numbers here", set()),
    ("g128 checkpoints", set()),  # a number glued to a word is a name, not a stated quantity
])
def test_numbers_are_normalised(text, expected):
    assert F.numbers(text) == expected


def test_number_missing_sees_a_changed_number():
    evidence = "What group size is recommended? 128 consecutive weights per group."
    assert F.number_missing("The recommended default group size is 64.", evidence) == 1.0
    assert F.number_missing("The group size is 128.", evidence) == 0.0
    assert F.number_missing("Groups are consecutive weights.", evidence) == 0.0  # no number: nothing to miss
    assert F.number_missing("A tensor-parallel group spans two nodes.", "Keep it within one node, at most 8.") == 1.0


def test_names_skip_sentence_initial_words_but_keep_acronyms():
    assert F.names("The model uses GPTQ and AWQ. Paris is nice.") == {"gptq", "awq"}
    assert "vllm" in F.names("Serve it with vLLM on an H100.") and "h100" in F.names("Serve it with vLLM on an H100.")
    assert F.names("He met Marie Curie in Warsaw.") == {"marie", "curie", "warsaw"}


def test_entity_missing():
    ev = "Marie Curie was born in Warsaw."
    assert F.entity_missing("She was born in Warsaw.", ev) == 0.0
    assert F.entity_missing("She was born in Vienna.", ev) == 1.0
    assert F.entity_missing("it was born in a city.", ev) == 0.0


@pytest.mark.parametrize("claim,premise,flip", [
    ("The bridge is open.", "The bridge is not open.", 1.0),
    ("The bridge isn't open.", "The bridge is closed; it is not open.", 0.0),
    ("A group spans two nodes.", "No; keep it within one node.", 1.0),
    ("It never fails.", "It fails sometimes.", 1.0),
    ("It works.", "It works well.", 0.0),
])
def test_negation_flip(claim, premise, flip):
    assert F.negation_flip(claim, premise) == flip


def test_lexical_doc_reads_the_whole_evidence():
    assert F.lexical_doc("paris tower 1889", "The tower is in Paris.\n\nIt opened in 1889.") == 1.0
    assert F.lexical_doc("", "anything") == 0.0


def test_bigram_doc_sees_the_same_words_in_another_relation():
    ev = "FlashAttention outperforms standard attention on long sequences."
    assert F.bigram_doc("FlashAttention outperforms standard attention.", ev) == 1.0
    swapped = F.bigram_doc("Standard attention outperforms FlashAttention.", ev)
    assert F.lexical_doc("Standard attention outperforms FlashAttention.", ev) == 1.0 and swapped < 0.5
    assert F.bigram_doc("attention", ev) == F.lexical_doc("attention", ev) == 1.0  # one word: its unigram share
    assert F.bigram_doc("nothing shared here", ev) == 0.0


def test_idf_weights_rank_rare_words_higher_and_idf_doc_uses_them():
    docs = ["the cache grows", "the cache shrinks", "the cache holds keys", "a paged cache", "cache and vllm"]
    idf = F.idf_weights(docs, min_df=1)
    assert idf["cache"] < idf["vllm"]
    assert math.isclose(idf["cache"], math.log(6 / 6) + 1)
    unseen = max(idf.values())
    # the rare word missing costs more than the common word missing
    rare_missing = F.idf_doc("cache vllm", "the cache", idf, unseen)
    common_missing = F.idf_doc("cache vllm", "vllm only", idf, unseen)
    assert rare_missing < common_missing
    assert F.idf_doc("cache zyzzyva", "cache zyzzyva", idf, unseen) == 1.0


@pytest.mark.parametrize("text,expected", [
    ("Upgrade to version 2.1.0 now.", {"2.1.0"}),
    ("It listens on 10.0.0.1 by default.", {"10.0.0.1"}),
    ("It requires Python 3.10 or newer.", {"3.10"}),
    ("It requires Python 3.1 or newer.", {"3.1"}),
    ("Install PyTorch 2.10 with CUDA 12.0.", {"2.10", "12"}),  # 12.0 reads as 12 either way
    ("It costs 3.50 per unit.", {"3.5"}),  # a plain decimal: 3.50 and 3.5 are one number
    ("Accuracy 0.90 is reported.", {"0.9"}),  # a capitalised word opening a sentence is no name
])
def test_versions_and_addresses_are_read_whole(text, expected):
    assert F.numbers(text) == expected


def test_a_changed_version_or_address_is_a_missing_number():
    assert F.number_missing("The fix shipped in version 2.1.5.", "The fix shipped in version 2.1.0.") == 1.0
    assert F.number_missing("It listens on 10.0.0.2.", "It listens on 10.0.0.1.") == 1.0
    assert F.number_missing("It needs Python 3.1.", "It needs Python 3.10.") == 1.0
    assert F.number_missing("It needs Python 3.10.", "The library needs Python 3.10 or newer.") == 0.0


def test_a_score_after_an_acronym_is_a_decimal_not_a_version():
    from eval.judges.features import numbers

    assert numbers("BLEU 27.30") == numbers("a BLEU of 27.3") == {"27.3"}
    assert numbers("pH 7.40") == {"7.4"} and numbers("MMLU 86.40 was reported") == {"86.4"}
    assert numbers("requires Python 3.10") == {"3.10"} and numbers("PyTorch 2.10") == {"2.10"}


# --- one number, many writings (the number reader under every judge) --------------------------------------------
def _same(a: str, b: str) -> bool:
    """Each side states every number of the other (in either direction the check finds nothing missing)."""
    return F.number_missing(a, b) == 0.0 and F.number_missing(b, a) == 0.0


@pytest.mark.parametrize("writing", ["128 000", "128\u00a0000", "128\u202f000", "128\u2009000", "128\u2007000",
                                     "128,000", "128000", "128k", "128K"])
def test_thousands_written_with_a_space_comma_or_magnitude_are_one_number(writing):
    assert _same(f"The context holds {writing} tokens.", "The context holds 128,000 tokens.")
    assert _same(f"The context holds {writing} tokens.", "It reads 128000 tokens in a pass.")


def test_a_group_space_joins_strict_groups_only():
    assert F.numbers("1\u00a0048\u00a0576 tokens") == {"1048576"}
    assert F.numbers("in 2023\u00a0100 people") == {"2023", "100"}  # a first group of 4 digits is no group
    assert F.numbers("1 2") == {"1", "2"} and F.numbers("64 128 32") == {"64", "128", "32"}
    assert F.numbers("in 2023 100 people") == {"2023", "100"}  # never 2023100
    assert "2023100" not in F.numbers("in 2023 100 000 people")
    # a plain space is read both ways: the whole, or its parts; either stated is enough
    assert F.numbers("128 000") == {"128000", "128", "0"}
    assert F.number_missing("It serves 512 100-token chunks.", "512 chunks of 100 tokens") == 0.0


@pytest.mark.parametrize("claim,evidence", [
    ("It holds 1,048,580 tokens.", "It holds 1,048,576 tokens."),
    ("It holds 1 048 580 tokens.", "It holds 1,048,576 tokens."),
    ("It holds 1\u00a0048\u00a0580 tokens.", "It holds 1048576 tokens."),
    ("It holds 128 000 tokens.", "It holds 120,000 tokens."),
    ("It holds 1.5k tokens.", "It holds 1.6k tokens."),
    ("It holds 1.5k tokens.", "It holds 1,600 tokens."),
    ("It holds 128k tokens.", "It holds 128 tokens."),
    ("It was released in 2023.", "It was released in 2024."),
    ("The rate is 0,1.", "The rate is 0.2."),
    ("It costs $1.5M.", "It costs 1.6 million dollars."),
    ("Use the 7B model.", "Use the 8B model."),
    ("The low is −3 degrees.", "The low is 3 degrees."),
])
def test_different_numbers_stay_different(claim, evidence):
    assert F.number_missing(claim, evidence) > 0.0


@pytest.mark.parametrize("text,expected", [
    ("batch sizes 1,2,4,8", {"1", "2", "4", "8"}),
    ("layers 10,20,30", {"10", "20", "30"}),
    ("scores 12,345,67", {"12", "345", "67"}),  # the groups are not all of three digits: a list
    ("1,024 and 1,048,576", {"1024", "1048576"}),  # strict thousands groups
    ("a dropout of 0,1", {"0", "1", "0.1"}),  # a decimal comma or two numbers: both readings stated
    ("0,125", {"0", "125", "0.125"}),  # a first group of 0 is no thousands group
])
def test_comma_lists_and_decimal_commas(text, expected):
    assert F.numbers(text) == expected


def test_a_decimal_comma_is_stated_by_either_reading():
    assert _same("The dropout is 0,1.", "The dropout is 0.1.")
    assert F.number_missing("It weighs 2,25 kg.", "It weighs 2.25 kg.") == 0.0
    assert F.number_missing("Scores range over 0,1.", "Scores range from 0 to 1.") == 0.0
    assert F.number_missing("It runs on 1,2,4,8 GPUs.", "It runs on 1248 GPUs.") == 1.0  # a list is no one number
    assert F.number_missing("It runs on 1,2,4,8 GPUs.", "1, 2, 4 or 8 GPUs") == 0.0


@pytest.mark.parametrize("text,expected", [
    ("约占2 GB", {"2"}), ("显存约占16GB", {"16"}), ("約2時間かかる", {"2"}), ("第3章", {"3"}), ("사과 3개", {"3"}),
    ("共1,024个", {"1024"}), ("g128 checkpoints", set()),  # a Latin word glued to digits is still a name
])
def test_digits_touching_cjk_characters_are_numbers(text, expected):
    assert F.numbers(text) == expected


@pytest.mark.parametrize("writing", ["2023-03-15", "15.03.2023", "15/03/2023", "March 15, 2023", "Mar. 15, 2023",
                                     "15 March 2023", "the 15th of March, 2023", "March 15th 2023", "2023年3月15日",
                                     "2023/03/15"])
def test_a_date_in_any_common_writing_is_one_date(writing):
    assert _same(f"It shipped on {writing}.", "It shipped on March 15, 2023.")
    assert _same(f"It shipped on {writing}.", "It shipped on 2023-03-15.")
    assert F.number_missing(f"It shipped on {writing}.", "It shipped on March 16, 2023.") == 1.0
    assert F.number_missing(f"It shipped on {writing}.", "It shipped on March 15, 2024.") == 1.0
    assert F.number_missing("It shipped in 2023.", f"It shipped on {writing}.") == 0.0  # the year is stated


def test_day_or_month_first_dates_accept_either_reading():
    assert F.number_missing("It shipped on 03/04/2023.", "It shipped on 2023-03-04.") == 0.0
    assert F.number_missing("It shipped on 03/04/2023.", "It shipped on 2023-04-03.") == 0.0
    assert F.number_missing("It shipped on 03/04/2023.", "It shipped on 2023-03-05.") == 1.0
    assert F.number_missing("It shipped on 2023-04-03.", "It shipped on 03/04/2023.") == 0.0
    assert F.numbers("03/15/2023") == F.numbers("2023-03-15") | {"15", "3", "2023"}  # only month first is a date
    assert F.numbers("15.03.2023") >= {"2023-03-15"} and "15.03.2023" not in F.numbers("15.03.2023")
    assert F.numbers("31.02.2023") == {"31.02.2023"}  # no such day: read as written, whole


@pytest.mark.parametrize("a,b", [
    ("1.5k", "1,500"), ("128k", "128K"), ("128K", "128 thousand"), ("$1.5M", "$1,500,000"), ("$1.5M", "1.5 million"),
    ("2B", "2 billion"), ("7B", "7,000,000,000"), ("2bn", "2B"), ("1.5 million", "1,500,000"), ("$5m", "$5 million"),
    ("two million", "2,000,000"), ("one hundred", "100"), ("1.2T", "1.2 trillion"),
])
def test_magnitudes_are_multiplied_out(a, b):
    assert _same(f"It has {a} parameters.", f"It has {b} parameters.")


def test_units_are_not_magnitudes():
    assert F.numbers("16GB and 128KB") == {"16", "128"}  # a unit stays apart: GB vs MB is not converted
    assert F.numbers("a 5m cable") == {"5"} and F.numbers("It ran for 5 min.") == {"5"}
    assert [f.shown for f in F.number_facts("Llama-2-70B")] == ["2", "70000000000"]
    assert F.numbers("Llama-2-70B") == {"2", "70", "70000000000"}  # it also states 70 (70B may be 70 bytes)
    assert F.numbers("a million users") == {"1000000"}
    assert [f.shown for f in F.number_facts("1.5 million", words=False)] == ["1500000"]


def test_invisible_characters_and_a_unicode_minus():
    assert F.numbers("\u22123 and \u2212 0.5") == {"-3", "0.5"} and _same("It fell to \u22123.", "It fell to -3.")
    assert F.numbers("1\u200b024 tokens") == {"1024"}  # a zero-width space inside a number does not split it
    assert F.names("Use F\u200bP16 weights.") == {"fp16"}
    assert F.entity_missing("Use FP16.", "Use F\u00adP16 weights.") == 0.0


def test_number_words_and_ambiguous_writings_keep_their_share():
    assert F.number_missing("It has 128 000 tokens and 64 heads.", "It has 128,000 tokens and 32 heads.") == 1 / 3
    assert F.number_facts("twelve layers, 12 heads") == [F.NumberFact("12", frozenset({"12"}))]


def test_a_magnitude_letter_that_abbreviates_a_unit_still_matches_the_unit():
    assert F.number_missing("It uses 64K pages.", "It uses 64 KB pages.") == 0.0
    assert F.number_missing("A cache line is 64B.", "A cache line is 64 bytes.") == 0.0
    assert F.number_missing("It uses 64 KB pages.", "It uses 64K pages.") == 0.0
    assert F.number_missing("It holds 128k tokens.", "It holds 128 tokens.") == 1.0
    assert F.number_missing("It holds 64K rows.", "It holds 32 KB rows.") == 1.0
