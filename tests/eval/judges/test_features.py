"""The compact judge's model-free features (eval/judges/features.py) and the number reader they rest on
(eval/judges/numbers.py): hand-made cases for each."""
import math

import pytest

from eval.judges import features as F
from eval.judges import numbers as N


@pytest.mark.parametrize("text,expected", [
    ("The group size is 128.", {"128"}),
    ("It costs 1,024 dollars, or 2.50 per unit.", {"1024", "2.5"}),
    ("twelve layers and two heads", {"12", "2"}),
    ("Released in 2019 (version 3.5; v4 is a name).", {"2019", "3.5"}),
    ("no numbers here", set()),
    ("g128 checkpoints", set()),  # a number glued to a word is a name, not a stated quantity
])
def test_numbers_are_normalised(text, expected):
    assert N.numbers(text) == expected


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
    assert N.numbers(text) == expected


def test_a_changed_version_or_address_is_a_missing_number():
    assert F.number_missing("The fix shipped in version 2.1.5.", "The fix shipped in version 2.1.0.") == 1.0
    assert F.number_missing("It listens on 10.0.0.2.", "It listens on 10.0.0.1.") == 1.0
    assert F.number_missing("It needs Python 3.1.", "It needs Python 3.10.") == 1.0
    assert F.number_missing("It needs Python 3.10.", "The library needs Python 3.10 or newer.") == 0.0


def test_a_score_after_an_acronym_is_a_decimal_not_a_version():
    from eval.judges.numbers import numbers

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
    assert N.numbers("1\u00a0048\u00a0576 tokens") == {"1048576"}
    assert N.numbers("in 2023\u00a0100 people") == {"2023", "100"}  # a first group of 4 digits is no group
    assert N.numbers("1 2") == {"1", "2"} and N.numbers("64 128 32") == {"64", "128", "32"}
    assert N.numbers("in 2023 100 people") == {"2023", "100"}  # never 2023100
    assert "2023100" not in N.numbers("in 2023 100 000 people")
    # a plain space is read both ways: the whole, or its parts; either stated is enough
    assert N.numbers("128 000") == {"128000", "128", "0"}
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
    assert N.numbers(text) == expected


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
    assert N.numbers(text) == expected


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
    assert N.numbers("03/15/2023") == N.numbers("2023-03-15") | {"15", "3", "2023"}  # only month first is a date
    assert N.numbers("15.03.2023") >= {"2023-03-15"} and "15.03.2023" not in N.numbers("15.03.2023")
    assert N.numbers("31.02.2023") == {"31.02.2023"}  # no such day: read as written, whole


@pytest.mark.parametrize("a,b", [
    ("1.5k", "1,500"), ("128k", "128K"), ("128K", "128 thousand"), ("$1.5M", "$1,500,000"), ("$1.5M", "1.5 million"),
    ("2B", "2 billion"), ("7B", "7,000,000,000"), ("2bn", "2B"), ("1.5 million", "1,500,000"), ("$5m", "$5 million"),
    ("two million", "2,000,000"), ("one hundred", "100"), ("1.2T", "1.2 trillion"),
])
def test_magnitudes_are_multiplied_out(a, b):
    assert _same(f"It has {a} parameters.", f"It has {b} parameters.")


def test_units_are_not_magnitudes():
    assert N.numbers("16GB and 128KB") == {"16", "128"}  # a unit stays apart: GB vs MB is not converted
    assert N.numbers("a 5m cable") == {"5"} and N.numbers("It ran for 5 min.") == {"5"}
    assert [f.shown for f in N.number_facts("Llama-2-70B")] == ["2", "70000000000"]
    assert N.numbers("Llama-2-70B") == {"2", "70", "70000000000"}  # it also states 70 (70B may be 70 bytes)
    assert N.numbers("a million users") == {"1000000"}
    assert [f.shown for f in N.number_facts("1.5 million", words=False)] == ["1500000"]


def test_invisible_characters_and_a_unicode_minus():
    assert N.numbers("\u22123 and \u2212 0.5") == {"-3", "0.5"} and _same("It fell to \u22123.", "It fell to -3.")
    assert N.numbers("1\u200b024 tokens") == {"1024"}  # a zero-width space inside a number does not split it
    assert F.names("Use F\u200bP16 weights.") == {"fp16"}
    assert F.entity_missing("Use FP16.", "Use F\u00adP16 weights.") == 0.0


def test_number_words_and_ambiguous_writings_keep_their_share():
    assert F.number_missing("It has 128 000 tokens and 64 heads.", "It has 128,000 tokens and 32 heads.") == 1 / 3
    assert N.number_facts("twelve layers, 12 heads") == [N.NumberFact("12", frozenset({"12"}))]


def test_a_magnitude_letter_that_abbreviates_a_unit_still_matches_the_unit():
    assert F.number_missing("It uses 64K pages.", "It uses 64 KB pages.") == 0.0
    assert F.number_missing("A cache line is 64B.", "A cache line is 64 bytes.") == 0.0
    assert F.number_missing("It uses 64 KB pages.", "It uses 64K pages.") == 0.0
    assert F.number_missing("It holds 128k tokens.", "It holds 128 tokens.") == 1.0
    assert F.number_missing("It holds 64K rows.", "It holds 32 KB rows.") == 1.0


# --- session 32: more group marks, units, two-digit years -------------------------------------------------------
@pytest.mark.parametrize("writing", ["1.234.567", "1'234'567", "1\u2019234\u2019567", "1_234_567", "1,234,567"])
def test_dots_apostrophes_and_underscores_group_thousands(writing):
    assert N.numbers(f"It has {writing} users.") == {"1234567"}
    assert _same(f"It has {writing} users.", "It has 1234567 users.")
    assert F.number_missing(f"It has {writing} users.", "It has 1,234,568 users.") == 1.0


@pytest.mark.parametrize("text,expected", [
    ("It has 1.234 users.", {"1.234"}),  # one dot group is ambiguous: read as the decimal it would be in English
    ("pi is 3.14", {"3.14"}), ("Upgrade to 1.2.3 now.", {"1.2.3"}), ("version 10.100.200.5", {"10.100.200.5"}),
    ("It listens on 192.168.100.200.", {"192.168.100.200"}),  # an address, not 192168100200
    ("It costs 1.234.567,89 euros.", {"1234567.89", "1234567", "89"}),  # dots, then a decimal comma: both ways
    ("It is 5'10 tall.", {"5", "10"}),
])
def test_a_dot_group_is_read_only_where_it_cannot_be_a_decimal_version_or_address(text, expected):
    assert N.numbers(text) == expected


@pytest.mark.parametrize("a,b", [
    ("64 KB", "64KB"), ("64 KB", "64 kB"), ("64 KB", "64 kilobytes"), ("64 KB", "64,000 bytes"),
    ("64 KB", "65,536 bytes"), ("64 KiB", "65536 B"), ("2 GB", "2048 MB"), ("2 GB", "2000 MB"), ("1 TB", "1024 GB"),
    ("1.5 hours", "90 minutes"), ("90 min", "5400 s"), ("2 days", "48 hours"), ("500 ms", "0.5 seconds"),
    ("100 Mbit", "100 Mb"), ("64K", "64 KB"), ("7B", "7 bytes"),
])
def test_a_quantity_in_another_unit_of_its_kind_is_the_same_fact(a, b):
    assert _same(f"The limit is {a}.", f"The limit is {b}.")


@pytest.mark.parametrize("claim,evidence", [
    ("The page is 64 MB.", "The page is 64 KB."),  # the number is the same, the quantity is not
    ("The page is 64KB.", "The page is 64 GB."),
    ("It takes 2 GB.", "It takes 2 MB."),
    ("It takes 64 MiB.", "It takes 64,000,000 bytes."),  # MiB is binary only
    ("It took 90 minutes.", "It took 90 seconds."),
    ("It took 1.5 hours.", "It took 1.5 minutes."),
    ("The cap is 64K.", "The cap is 64 MB."),  # 64K may be 64 KB, never 64 MB
    ("It has 64K params.", "It is 64 km long."),  # only a byte unit is what a K may abbreviate
    ("A 64B model.", "A 64-bit model."),  # bits and bytes are not converted, nor confused
    ("The link is 100 Mbit.", "The link is 100 MB."),
])
def test_the_same_number_with_another_unit_is_missing(claim, evidence):
    assert F.number_missing(claim, evidence) == 1.0


def test_a_number_stated_without_a_unit_states_it_with_one():
    assert F.number_missing("It comes with 16 GB.", "It comes in 16 or 32 GB.") == 0.0  # the unit is said once
    assert F.number_missing("It uses 64 MB.", "Memory (MB) | 64") == 0.0
    assert F.number_missing("It uses 64 MB.", "It uses 64 KB.") == 1.0  # with another unit: no
    assert F.number_missing("It has 64 pages.", "It has 64 KB pages.") == 0.0  # a unitless claim: its number
    assert N.numbers("16GB, 90 min and 64-bit") == {"16", "90", "64"}  # numbers() is the numbers, as before
    assert [f.shown for f in N.number_facts("It takes 2 GB and 1.5 hours.")] == ["2 GB", "1.5 hours"]


def test_other_units_and_rates_are_plain_numbers():
    assert F.number_missing("It is 5 km.", "It is 5 miles.") == 0.0  # not converted: its number is compared
    assert F.number_missing("It reads 10 GB/s.", "It reads 10 GB/s.") == 0.0
    assert F.number_missing("It reads 10 GB/s.", "It reads 10 MB/s.") == 0.0  # a rate is no unit here
    assert N.numbers("a 5m cable, 128 tokens") == {"5", "128"}


@pytest.mark.parametrize("writing", ["03/15/23", "3/15/23", "15/03/23", "15-03-23", "15.03.23"])
def test_a_date_with_a_two_digit_year_is_read(writing):
    assert _same(f"It shipped on {writing}.", "It shipped on March 15, 2023.")
    assert F.number_missing(f"It shipped on {writing}.", "It shipped on March 16, 2023.") > 0.0
    assert F.number_missing(f"It shipped on {writing}.", "It shipped on March 15, 2024.") > 0.0
    assert F.number_missing("It shipped in 2023.", f"It shipped on {writing}.") == 0.0


def test_a_two_digit_year_keeps_its_other_readings():
    assert F.number_missing("Batch sizes 4/8/16 work.", "Batch sizes 4, 8 and 16 work.") == 0.0  # a list
    assert F.number_missing("It needs 15.03.23.", "It needs version 15.03.23.") == 0.0  # a version
    assert "1999-12-31" in N.numbers("12/31/99") and "2068-01-01" in N.numbers("01/01/68")  # POSIX's pivot
    assert N.numbers("Upgrade to 1.2.10.") == {"1.2.10"}  # a version is no 2010-02-01
    assert "2023-03-15" not in N.numbers("15.3.23")  # dotted, only zero-padded day and month


@pytest.mark.parametrize("claim,evidence,missing", [
    ("It shipped in '23.", "It shipped in 2023.", 0.0), ("It shipped in 2023.", "It shipped in \u201923.", 0.0),
    ("It shipped in '23.", "It shipped in 2024.", 1.0), ("Music of the '90s.", "Music of the 1990s.", 0.0),
    ("Set x = '23'.", "Set x = 2023.", 1.0),  # a quoted number is no year
])
def test_an_apostrophe_year(claim, evidence, missing):
    assert F.number_missing(claim, evidence) == missing


# --- session 33: spaced magnitudes, European decimals, spaced and comma numbers with a unit, year-first dates -----
@pytest.mark.parametrize("a,b", [
    ("128 K tokens", "128K tokens"), ("128 k tokens", "128,000 tokens"), ("128\u00a0K tokens", "128000 tokens"),
    ("1.5 M tokens", "1.5M tokens"), ("1.5 M rows", "1,500,000 rows"), ("7 B parameters", "7B parameters"),
    ("7 B parameters", "7 billion parameters"), ("2 bn users", "2 billion users"), ("2 BN users", "2bn users"),
    ("$1.5 M", "$1,500,000"), ("\u20ac2 bn", "2 billion euros"), ("$5 m", "$5 million"), ("$1.2 T", "1.2 trillion"),
])
def test_a_magnitude_after_a_space_multiplies_where_it_counts_a_noun_or_money(a, b):
    assert _same(f"It has {a}.", f"It has {b}.")


@pytest.mark.parametrize("claim,evidence", [
    ("It reads 128 K tokens.", "It reads 128 tokens."),  # 128 K is 128000, as 128K is
    ("It reads 1.5 M tokens.", "It reads 1.6M tokens."),
    ("A 7 B parameter model.", "An 8B parameter model."),
    ("A 7 B parameter model.", "A 7 million parameter model."),
    ("It raised $1.5 M.", "It raised $1.5 billion."),
])
def test_a_spaced_magnitude_is_compared_on_its_value(claim, evidence):
    assert F.number_missing(claim, evidence) == 1.0


@pytest.mark.parametrize("text,expected", [
    ("Pupils of grade 7 B students sang.", {"7"}),  # a label before the number: a class, not 7 billion
    ("Figure 3 B shows the curve.", {"3"}), ("See Fig. 2 K panel below.", {"2"}),
    ("Pick option 3 B or 4 C.", {"3", "4"}),  # a function word after the letter: a list's item
    ("It is a 7 B.", {"7"}), ("Go to step 2 A now.", {"2"}),  # no word after it; A is no magnitude
    ("It was cooled to 300 K.", {"300"}), ("A 3 T scanner.", {"3"}), ("A 5 m cable.", {"5"}), ("the 3 b", {"3"}),
    ("A 128 K-token window.", {"128"}),  # glued to a hyphenated word: as written ('128K-token' is 128000)
])
def test_a_letter_after_a_space_is_no_magnitude_where_it_may_be_a_label_or_unit(text, expected):
    assert N.numbers(text) == expected


def test_a_letter_that_is_no_magnitude_keeps_its_old_reading():
    assert F.number_missing("Pupils of grade 7 B sang.", "Pupils of grade 7 sang.") == 0.0
    assert [f.shown for f in N.number_facts("Pupils of grade 7 B sang.")] == ["7 B"]  # a spaced B: bytes, as before
    assert F.number_missing("It has 128 tokens.", "It has 128 K tokens.") == 0.0  # it states 128, as 128K does


@pytest.mark.parametrize("text,expected", [
    ("It costs 1.234,56 euros.", {"1234.56", "1234", "56"}),  # European: dots group, the comma is the decimal
    ("It costs 12.345,6 euros.", {"12345.6", "12345", "6"}), ("It fell by -1.234,5.", {"-1234.5", "-1234", "5"}),
    ("It costs 1.234.567,89 euros.", {"1234567.89", "1234567", "89"}),  # as before
    ("It has 1.234 users.", {"1.234"}), ("It has 1,234 users.", {"1234"}),  # unchanged: a decimal, a group
    ("Rates 1.500,2.000 apply.", {"1.5", "2"}),  # two decimals in a list: no European number
    ("Rates 1.5,2.5 apply.", {"1.5", "2.5"}), ("pages 1.234, 5", {"1.234", "5"}),  # no 3-digit group or a space
    ("a dropout of 0,1", {"0", "1", "0.1"}),  # a comma alone: both ways, as before
])
def test_a_european_decimal_comma_after_dot_thousands(text, expected):
    assert N.numbers(text) == expected


def test_a_european_decimal_is_stated_by_its_english_writing():
    assert _same("It costs 1.234,56 euros.", "It costs 1,234.56 euros.")
    assert _same("It costs 1.234,56 euros.", "It costs 1234.56 euros.")
    assert F.number_missing("It costs 1.234,56 euros.", "It costs 1,234.57 euros.") > 0.0
    assert F.number_missing("It costs 1.234,56 euros.", "It costs 1.234 euros.") > 0.0


@pytest.mark.parametrize("a,b", [
    ("64 Mbytes", "64 MB"), ("64 MBytes", "64MB"), ("64 KBytes", "65,536 bytes"), ("64 kbyte", "64 KB"),
    ("2 GBs", "2048 MB"), ("90 Min", "1.5 hours"), ("1.5 HRS", "90 minutes"), ("2 Hrs", "120 min"),
    ("1,5 h", "90 min"), ("1,5 hours", "5400 s"), ("2,5 GB", "2.5 GB"), ("2,5 GB", "2560 MB"),
    ("2 048 MB", "2 GB"), ("1\u00a0536 KB", "1.5 MB"), ("1 536 KB", "1536KB"), ("1.234,5 MB", "1234.5 MB"),
])
def test_a_spaced_or_comma_number_with_a_unit_is_a_quantity(a, b):
    assert _same(f"The limit is {a}.", f"The limit is {b}.")


@pytest.mark.parametrize("claim,evidence", [
    ("It takes 64 Mbytes.", "It takes 64 KB."), ("It took 90 Min.", "It took 90 s."),
    ("It takes 3,5 GB.", "It takes 3,5 MB."), ("It took 1,5 h.", "It took 1,5 min."),
    ("It takes 2 048 MB.", "It takes 2 048 KB."), ("It takes 128 000 MB.", "It takes 128 000 KB."),
    ("It takes 1 536 KB.", "It takes 1.5 GB."), ("It took 1,5 hours.", "It took 90 seconds."),
])
def test_a_spaced_or_comma_number_with_another_unit_is_missing(claim, evidence):
    assert F.number_missing(claim, evidence) > 0.0 and F.number_missing(evidence, claim) > 0.0


def test_a_spaced_or_comma_number_with_a_unit_keeps_its_other_readings():
    assert N.numbers("2 048 MB") == {"2048", "2", "48"} and N.numbers("1,5 h") == {"1.5", "1", "5"}  # as before
    assert F.number_missing("It uses 100 MB.", "rank 5 100 MB") == 0.0  # two numbers, the unit said once
    assert F.number_missing("It has rank 5.", "rank 5 100 MB") == 0.0
    assert F.number_missing("It uses 2048 of it.", "It uses 2 048 MB.") == 0.0  # a bare number is stated
    assert [f.shown for f in N.number_facts("It uses 2 048 MB.")] == ["2 048 MB", "2 048 MB"]


@pytest.mark.parametrize("writing", ["2023-05-01", "May 1, 2023", "1 May 2023", "the 1st of May, 2023", "May 1st 2023",
                                     "01.05.2023", "2023/05/01", "23-05-01"])
def test_the_first_of_may_in_any_writing(writing):
    assert _same(f"It shipped on {writing}.", "It shipped on 2023-05-01.")
    assert _same(f"It shipped on {writing}.", "It shipped on May 1, 2023.")
    assert F.number_missing(f"It shipped on {writing}.", "It shipped on 2023-05-02.") > 0.0
    assert F.number_missing("It shipped in 2023.", f"It shipped on {writing}.") == 0.0


def test_a_hyphenated_two_digit_date_is_also_read_year_first():
    assert {"2023-05-01", "2001-05-23"} <= N.numbers("23-05-01")  # year first, or day first as before
    assert "1999-12-31" in N.numbers("99-12-31")  # only year first names a day
    assert F.number_missing("It shipped on 23-05-01.", "It shipped on 2001-05-23.") == 0.0
    assert F.number_missing("It shipped on 23-05-01.", "It shipped on 2023-06-01.") > 0.0
    assert "2023-05-01" not in N.numbers("23/05/01") and "2023-05-01" not in N.numbers("23.05.01")  # hyphens only


@pytest.mark.parametrize("text,expected", [
    ("Call 555-123-4567 now.", {"555", "123", "4567"}), ("Steps 1-2-3 run.", {"1", "2", "3"}),
    ("Call 555-12-34 now.", {"555", "12", "34"}), ("Codes 12-34-56 ran.", {"12", "34", "56"}),  # no month 34
    ("Versions 10-2-1 ran.", {"10", "2", "1"}), ("Ranges 23-5-1 ran.", {"23", "5", "1"}),  # not zero-padded
])
def test_other_hyphenated_digit_groups_are_no_year_first_date(text, expected):
    assert N.numbers(text) == expected


def test_a_year_first_reading_keeps_the_numbers():
    assert F.number_missing("Scores 10-20-30 were reached.", "Scores 10, 20 and 30 were reached.") == 0.0
    assert F.number_missing("Codes 23-05-01 ran.", "Codes 23, 5 and 1 ran.") == 0.0


# --- METRICS_VERSION 19: durations in parts, informal and French sizes, a spaced magnitude counts a noun ----------
@pytest.mark.parametrize("writing", ["1 h 30 min", "1h30", "1h30m", "1h 30m", "1 hr 30 mins", "1 hour 30 minutes",
                                     "1 hour and 30 minutes", "1 Hr 30 Min", "1:30 h", "1:30 hours", "1 h 30min"])
def test_a_duration_in_parts_is_one_quantity(writing):
    assert _same(f"It took {writing}.", "It took 90 minutes.")
    assert _same(f"It took {writing}.", "It took 1.5 hours.")
    assert _same(f"It took {writing}.", "It took 5,400 s.")
    assert F.number_missing(f"It took {writing}.", "It took 1 h 45 min.") == 1.0  # a changed part is caught


@pytest.mark.parametrize("writing", ["1 h 30 min", "1h30", "1 hour and 30 minutes", "1:30 h"])
def test_a_duration_in_parts_states_no_part(writing):
    assert F.number_missing(f"It took {writing}.", "It took 1 h.") == 1.0
    assert F.number_missing("It took 1 h.", f"It took {writing}.") == 1.0
    assert F.number_missing("It took 30 min.", f"It took {writing}.") == 1.0
    assert F.number_missing("It has 30 layers.", f"It took {writing}.") == 1.0  # no bare 30
    assert F.number_missing("It has 1 layer.", f"It took {writing}.") == 1.0
    assert N.numbers(f"It took {writing}.") == {"5400 s"}  # one quantity: no bare number
    assert [f.shown for f in N.number_facts(f"It took {writing}.")] == [writing]


@pytest.mark.parametrize("a,b", [
    ("2 hours 15 minutes", "135 minutes"), ("2 hours and 15 minutes", "8100 seconds"), ("3 min 20 s", "200 seconds"),
    ("3 min 20 sec", "200 s"), ("1m30s", "90 s"), ("2:30 min", "150 s"), ("1d 12h", "36 hours"),
    ("2 days 3 hours", "51 hours"), ("1h 2m 3s", "3723 s"), ("1 s 500 ms", "1.5 seconds"), ("2h05", "125 min"),
    ("1:30:15 h", "5415 s"), ("1d2h30", "26.5 hours"),
])
def test_more_durations_in_parts(a, b):
    assert _same(f"The run took {a}.", f"The run took {b}.")


@pytest.mark.parametrize("claim,evidence", [
    ("It took 2 hours 15 minutes.", "It took 2 hours 30 minutes."), ("It took 3 min 20 s.", "It took 3 min 2 s."),
    ("It took 1h30.", "It took 1h03."), ("It took 1:30 h.", "It took 1:30 min."), ("It took 1 h 30 min.", "It took 1.3 h."),
    ("It took 2 days 3 hours.", "It took 2 hours 3 minutes."),
])
def test_a_changed_duration_in_parts_is_missing(claim, evidence):
    assert F.number_missing(claim, evidence) == 1.0 and F.number_missing(evidence, claim) == 1.0


def test_what_is_no_duration_in_parts_is_read_as_before():
    assert F.number_missing("It takes 30 minutes.", "It takes between 1 hour and 30 minutes.") == 0.0  # two durations
    assert F.number_missing("It takes 30 minutes.", "Runs took 1 hour, 30 minutes and 2 hours.") == 0.0  # a list
    assert N.numbers("It ran 90 min and 2 h.") == {"90", "2"}  # single units, as before
    assert N.numbers("It ran 1 h 30 min/epoch.") == {"1", "30"}  # a rate is no part of a duration
    assert N.numbers("Runs 1 h 1 h.") == {"1"}  # larger units first only
    assert F.number_missing("It took 90 minutes.", "It took 2 hours 30 minutes.") == 1.0
    assert N.numbers("It uses 8 h100s.") == {"8"}  # a spaced unit is not glued to a next part (h100: a name)
    assert N.numbers("It took 1 h 90 min.") == {"1", "90"}  # a later part within its unit's range only
    assert N.numbers("\u8017\u65f61h30m") == {"5400 s"}  # digits touching a CJK character, as elsewhere


@pytest.mark.parametrize("a,b", [
    ("64 Megs", "64 MB"), ("64 megs", "65,536 KB"), ("64 MEGS", "64MB"), ("2 gigs", "2048 MB"), ("1 gig", "1 GB"),
    ("2 Gigs", "2 GB"), ("64 Mo", "64 MB"), ("64Mo", "64 MB"), ("2 Go", "2 GB"), ("2 Go", "2048 MB"), ("1 To", "1 TB"),
    ("1To", "1024 GB"), ("512 Ko", "512 KB"), ("512 ko", "512 kB"), ("8 octets", "8 bytes"), ("2 gigaoctets", "2 GB"),
    ("3 m\u00e9gaoctets", "3 MB"),
])
def test_informal_and_french_sizes_are_quantities(a, b):
    # 'memory': an informal 'gigs' or 'megs' is a size only where the text is about data ('played 2 gigs' is none)
    assert _same(f"The memory limit is {a}.", f"The memory limit is {b}.")


@pytest.mark.parametrize("claim,evidence", [
    ("It takes 64 Mo.", "It takes 64 KB."), ("It takes 2 Go.", "It takes 2 MB."),
    ("It takes 64 megs of RAM.", "It takes 64 KB of RAM."), ("It takes 2 gigs of disk.", "It takes 2 TB of disk."),
    ("It takes 1 To.", "It takes 1 GB."), ("It takes 64 Ko.", "It takes 64 MB."),
])
def test_informal_and_french_sizes_with_another_unit_are_missing(claim, evidence):
    assert F.number_missing(claim, evidence) == 1.0 and F.number_missing(evidence, claim) == 1.0


def test_french_unit_letters_are_words_elsewhere():
    assert N.numbers("Go 1.21 is out.") == {"1.21"} and N.numbers("To do: 3 items.") == {"3"}
    assert [f.shown for f in N.number_facts("Rate it from 1 To 10.")] == ["1", "10"]  # the word, not 1 TB
    assert "1000000000000 B" not in N.stated("Rate it from 1 To 10.")
    assert [f.shown for f in N.number_facts("a 6 mo plan")] == ["6"]  # 'mo' is months as often: no unit


@pytest.mark.parametrize("text,expected", [
    ("It was cooled to 77 K under vacuum.", {"77"}), ("Samples at 4 K showed it.", {"4"}),  # kelvin
    ("It sat at 300 K room temperature.", {"300"}), ("A 0.5 M NaCl solution.", {"0.5"}),  # molar
    ("The 3 K cluster ran.", {"3"}), ("It is 5 K over budget.", {"5"}), ("The 3 M company.", {"3"}),
    ("Pupils of grade 7 B students sang.", {"7"}),  # a label before it, as before
])
def test_a_spaced_letter_before_no_count_noun_is_no_magnitude(text, expected):
    assert N.numbers(text) == expected


@pytest.mark.parametrize("a,b", [
    ("7 B dense parameters", "7B dense parameters"), ("2 M monthly users", "2,000,000 monthly users"),
    ("1.5 M USD", "1,500,000 USD"), ("USD 3 M", "USD 3,000,000"), ("revenue of 2 bn", "revenue of 2 billion"),
    ("680 K hours of audio", "680,000 hours of audio"), ("a 128 K context", "a 128K context"),
    ("a 7 B model", "a 7B model"), ("100 K steps", "100k steps"), ("1.2 M GitHub stars", "1.2M GitHub stars"),
    ("50 K Downloads", "50,000 downloads"),
])
def test_a_spaced_magnitude_counts_a_noun_a_modified_noun_or_money(a, b):
    assert _same(f"It has {a}.", f"It has {b}.")


def test_a_kelvin_temperature_is_no_thousands():
    assert F.number_missing("It holds 77,000 rows.", "It was cooled to 77 K under vacuum.") == 1.0
    assert F.number_missing("It was cooled to 77 K.", "It was cooled to 77 K under vacuum.") == 0.0
    assert F.number_missing("It reads 77 K tokens.", "It reads 77,000 tokens.") == 0.0


@pytest.mark.parametrize("text", [
    "".join("0123456789 "[(i * 7919) % 11] for i in range(100_000)), "1 " * 50_000, "123 " * 25_000,
    "1 h " * 25_000, "1h30" * 25_000, "1 h and " * 12_500, "1:30 " * 20_000, "128 K " * 16_000, "1" * 100_000,
    "1 h, " * 20_000, "at 10:30 h " * 9_000, "at 1 " * 25_000, "two hours " * 10_000, "2 gigs " * 14_000,
    "at " * 33_000, "cooled to 7K " * 8_000,
    # the half of a unit, percentages, versions and ordinals (METRICS_VERSION 28)
    "1 and a half " * 8_000, "a " * 50_000, "an hour and " * 9_000, "half a " * 14_000, "50 % " * 20_000,
    "v1 " * 30_000, "first " * 16_000, "a single " * 11_000, "two halves " * 9_000, "double-" * 12_000,
    "1e-4 " * 20_000, "10^" * 30_000, "1e" * 40_000, "1 x 10^-5 " * 9_000, " " * 100_000, "the  90s " * 10_000,
])
def test_a_long_text_of_digits_is_read_in_linear_time(text):
    import time

    start = time.perf_counter()
    N.number_facts(text)
    N.stated(text)  # what the other side states: ordinals and 'v2' too
    assert time.perf_counter() - start < 4.0  # well under a second unloaded: no regex backtracks across the text


# --- METRICS_VERSION 22: a clock time of day, informal sizes need data, comma-joined durations, number words -------
@pytest.mark.parametrize("text", [
    "We meet at 10:30 h.", "Wir treffen uns um 10:30 h.", "Rendez-vous \u00e0 10h30.", "It opens by 10:30 h.",
    "Open until 10:30 hours.", "Rendez-vous \u00e0 10 h 30.", "Doors open from 10h30.", "Ouvert jusqu'\u00e0 10h30.",
    "Ge\u00f6ffnet ab 10:30 h.", "It ends before 10:30 h.", "Call after 10h30.", "At 10:30 h the doors open.",
    "We meet at about 10:30 h.",
])
def test_a_clock_time_after_a_time_preposition_is_a_time_of_day(text):
    assert F.number_missing(text, "It took 630 minutes.") == 1.0  # no duration of 10.5 hours
    assert F.number_missing(text, "It took 10.5 h.") == 1.0
    assert not any(k.endswith(" s") for k in N.stated(text))
    for same in ("We meet at 10:30.", "We meet at 10h30.", "Meet at 10:30 h.", "at 10:30 a.m.", "10:30 Uhr"):
        assert F.number_missing(text, same) == 0.0, same  # the same time of day, written another way
        assert F.number_missing(same, text) == 0.0, same
    for other in ("We meet at 11:30 h.", "We meet at 10:30 pm.", "We meet at 10:45."):
        assert F.number_missing(text, other) == 1.0, other


def test_a_time_of_day_is_one_fact_and_durations_stay_durations():
    assert [f.shown for f in N.number_facts("We meet at 10:30 h.")] == ["10:30 h"]
    assert [f.shown for f in N.number_facts("Rendez-vous \u00e0 10h.")] == ["10h"]
    assert _same("Rendez-vous \u00e0 10h.", "Rendez-vous \u00e0 10:00.")
    assert F.number_missing("The job took 10:30 h.", "We meet at 10:30 h.") == 1.0  # a duration is no time of day
    assert F.number_missing("We meet at 10:30 h.", "The job took 10:30 h.") == 0.0  # '10:30 h' may be either there
    assert _same("The job took 1:30 h.", "The job took 90 minutes.")  # no time preposition: a duration, as before
    assert _same("It converged after 1:30 h of training.", "It converged after 90 minutes of training.")
    assert _same("Runtime was reduced by 1:30 h.", "Runtime was reduced by 90 minutes.")  # a change, not a time
    assert _same("It converged after 2 h.", "It converged after 120 minutes.")  # one hour: a clock in French only
    assert F.number_missing("Open from 9:00 h to 17:00 h.", "Open from 9:00 to 17:00.") == 0.0  # a range of times
    assert F.number_missing("Open from 9:00 h to 17:00 h.", "It took 17 hours.") == 1.0
    assert F.number_missing("Open from 9:00 h - 17:00 h.", "It took 17 hours.") == 1.0
    assert _same("It was cut to 1:30 h.", "It was cut to 90 min.")  # 'to' is a time only in a range of times
    assert _same("We meet at 25:30 h.", "We meet at 1530 minutes.")  # no hour of a day: read as before


@pytest.mark.parametrize("text", [
    "The band played 2 gigs.", "She has 2 gigs lined up this week.", "I played 1 gig in May.", "We booked 3 Gigs.",
    "It sold 64 megs.", "They played three gigs of jazz.",
])
def test_an_informal_size_without_data_around_it_is_a_plain_number(text):
    assert not any(k.endswith(" B") for k in N.stated(text))
    assert F.number_missing("It has 2048 MB of RAM.", text) == 1.0


@pytest.mark.parametrize("a,b", [
    ("It has 2 gigs of RAM.", "It has 2048 MB of RAM."), ("It needs 64 megs of video memory.", "It needs 65,536 KB."),
    ("The file is 2 gigs.", "The file is 2 GB."), ("a 2 gig download", "a 2048 MB download"),
    ("It needs three gigs of disk space.", "It needs 3 GB of disk space."), ("Its VRAM: 24 gigs.", "Its VRAM: 24 GB."),
    ("It takes 2 gigs (2048 MB).", "It takes 2 GB."), ("The GPU has 80 gigs.", "The GPU has 80 GB."),
])
def test_an_informal_size_about_data_is_a_quantity(a, b):
    assert _same(a, b)


@pytest.mark.parametrize("writing", ["1 hour, 30 minutes", "1 h, 30 min", "1 hour, and 30 minutes", "1 hr, 30 mins"])
def test_a_duration_joined_by_a_comma_is_one_quantity(writing):
    assert _same(f"It took {writing}.", "It took 90 minutes.")
    assert F.number_missing(f"It took {writing}.", "It took 1 h.") == 1.0
    assert F.number_missing("It took 30 min.", f"It took {writing}.") == 1.0
    assert F.number_missing("It has 30 layers.", f"It took {writing}.") == 1.0  # no bare 30
    assert N.numbers(f"It took {writing}.") == {"5400 s"}


@pytest.mark.parametrize("a,b", [
    ("2 hours, 15 minutes", "135 minutes"), ("2 hours and 15 minutes", "8100 s"), ("2 days, 3 hours", "51 hours"),
    ("2 hours, 15 minutes, 10 seconds", "8110 s"), ("1 min, 30 s", "90 s"),
])
def test_more_durations_joined_by_commas(a, b):
    assert _same(f"The run took {a}.", f"The run took {b}.")


def test_a_list_of_durations_is_read_apart():
    assert F.number_missing("It takes 30 minutes.", "Runs took 2 hours, 1 hour, 30 minutes.") == 0.0
    assert F.number_missing("It takes 30 minutes.", "Runs took 1 hour, 30 minutes or 2 hours.") == 0.0
    assert F.number_missing("It takes 30 minutes.", "Runs took 1 hour, 30 minutes, 2 hours.") == 0.0


@pytest.mark.parametrize("a,b", [
    ("two hours", "2 hours"), ("two hours", "120 minutes"), ("ninety minutes", "1.5 h"),
    ("two hours and thirty minutes", "150 minutes"), ("one hour, thirty minutes", "90 min"),
    ("twenty-five minutes", "25 min"), ("a two-hour run", "a 7200-second run"), ("two gigabytes", "2048 MB"),
    ("one hundred milliseconds", "0.1 s"), ("Two Hours", "7,200 s"),
])
def test_number_words_with_a_unit_are_quantities(a, b):
    assert _same(f"It took {a}.", f"It took {b}.")


def test_number_words_with_a_unit_are_read_as_their_number_with_it_only():
    assert F.number_missing("It took two hours.", "It took 2 days.") == 1.0
    assert F.number_missing("It took 2 hours.", "It took two days.") == 1.0
    assert F.number_missing("It took two hours.", "It has 2 layers.") == 0.0  # a bare 2 states it, as for '2 hours'
    assert N.number_facts("It took two hours.", words=False) == []  # digits only: no number word is read
    assert N.numbers("twelve layers and two heads") == {"12", "2"}  # no unit: as before
    assert N.numbers("It took half an hour, twice.") == {"0.5", "2"}


@pytest.mark.parametrize("text,expected", [
    ("At a temperature of 300 K samples degrade.", {"300"}), ("It was cooled to 77K.", {"77"}),
    ("Heated to 500 K samples melted.", {"500"}), ("At a temperature of 4K it superconducts.", {"4"}),
    ("Samples kept at 4 K tokens aside.", {"4"}), ("It sat at 300 K.", {"300"}), ("It was cooled to 77 K.", {"77"}),
])
def test_kelvin_after_a_temperature_word_is_no_magnitude(text, expected):
    assert N.numbers(text) == expected


@pytest.mark.parametrize("text,value", [
    ("It reads 300 K samples.", "300000"), ("It reads 128K tokens at temperature 0.7.", "128000"),
    ("With temperature 0.7 and 128K tokens.", "128000"), ("It ran at 300K steps.", "300000"),
    ("Trained at 300K.", "300000"),
])
def test_a_magnitude_away_from_a_temperature_word_still_multiplies(text, value):
    assert value in N.numbers(text)
