"""The content words the lexical signals compare (eval/tokens.py): a number is one token however it is grouped."""
import pytest

from eval.judges.features import bigram_doc, lexical_doc
from eval.tokens import content_tokens


@pytest.mark.parametrize("text,expected", [
    ("1,024 MB", ["1024", "mb"]),
    ("1024 MB", ["1024", "mb"]),
    ("1,048,576 tokens", ["1048576", "tokens"]),
    ("1,024.5 ms", ["1024.5", "ms"]),
    ("128\u00a0000 tokens", ["128000", "tokens"]),  # a no-break space between groups
    ("128\u202f000 tokens", ["128000", "tokens"]),  # a narrow no-break space
    ("128\u2009000 tokens", ["128000", "tokens"]),  # a thin space
    ("约1,024个", ["约", "1024", "个"]),  # CJK characters may touch a grouped number
])
def test_a_number_grouped_in_thousands_is_one_canonical_token(text, expected):
    assert content_tokens(text) == expected


@pytest.mark.parametrize("text,expected", [
    ("1,2,4,8", ["1", "2", "4", "8"]),  # a list, not 1248
    ("10,20,30", ["10", "20", "30"]),
    ("0,125", ["0", "125"]),  # a first group of 0 is no thousands group
    ("12,345,67", ["12", "345", "67"]),  # not every group has three digits
    ("1,0245", ["1", "0245"]),
    ("v1,024", ["v1", "024"]),  # glued to a word: not a number of its own
    ("2023\u00a0100", ["2023", "100"]),  # a first group of four digits is no group
    ("128 000", ["128", "000"]),  # a plain space may separate two numbers: left alone here
])
def test_only_strict_thousands_groups_are_joined(text, expected):
    assert content_tokens(text) == expected


def test_distinct_grouped_numbers_stay_distinct():
    assert content_tokens("1,048,580") != content_tokens("1,048,576")
    assert lexical_doc("1,048,580 tokens", "1,048,576 tokens") == 0.5


def test_the_lexical_signals_read_grouped_numbers_as_the_same_word():
    assert lexical_doc("It needs 1,024 MB.", "It needs 1024 MB of memory.") == 1.0
    assert bigram_doc("needs 1,024 MB", "it needs 1024 MB") == 1.0
    assert lexical_doc("128\u00a0000 tokens", "128,000 tokens") == 1.0


def test_invisible_characters_do_not_split_a_word():
    assert content_tokens("f\u200bp16 weights") == ["fp16", "weights"]
    assert content_tokens("FP\u00ad16 and E4\u2060M3") == ["fp16", "e4m3"]
    assert content_tokens("zero\u200dwidth\ufeff") == ["zerowidth"]


def test_a_short_negation_is_the_word_not():
    for short, full in (("It isn't paged.", "It is not paged."), ("It can't run.", "It cannot run."),
                        ("It won\u2019t fit.", "It will not fit."), ("It doesn't work.", "It does not work.")):
        assert content_tokens(short) == content_tokens(full), short
    assert content_tokens("No, it isn't.") == ["no", "not"]  # not 'isn', 't'


@pytest.mark.parametrize("text,expected", [
    ("1'000'000 rows", ["1000000", "rows"]),  # Swiss: an apostrophe between groups
    ("1\u2019000\u2019000 rows", ["1000000", "rows"]),  # ... or the typographic one
    ("1_000_000 steps", ["1000000", "steps"]),  # code
    ("1.234.567 users", ["1234567", "users"]),  # dots: two or more groups
    ("1.234.567.890", ["1234567890"]),
])
def test_apostrophes_underscores_and_dots_group_thousands_too(text, expected):
    assert content_tokens(text) == expected


@pytest.mark.parametrize("text,expected", [
    ("1.234 users", ["1.234", "users"]),  # one dot group: a decimal
    ("3.14", ["3.14"]),
    ("version 1.2.3", ["version", "1.2", "3"]),  # a version: its groups are not all of three digits
    ("192.168.100.200", ["192.168", "100.200"]),  # an address, never the number 192168100200
    ("1.234.567.8", ["1.234", "567.8"]),  # a further dot and digit: a version-like string, left alone
    ("5'10", ["5", "10"]),  # feet and inches: no group of three
    ("x_1_000", ["x", "1", "000"]),  # glued to a name
    ("1'000,5", ["1000", "5"]),
])
def test_what_is_no_thousands_group_stays_apart(text, expected):
    assert content_tokens(text) == expected


def test_emoji_and_symbols_are_no_content_words():
    """An emoji was a token of its own: an answer that repeats the evidence with a '🚀' scored 0.8, not 1.0."""
    evidence = "vLLM uses paged attention to serve many requests."
    assert lexical_doc("vLLM uses paged attention 🚀", evidence) == lexical_doc("vLLM uses paged attention", evidence)
    assert lexical_doc("vLLM uses paged attention ✅👍🏽", evidence) == 1.0
    assert content_tokens("Ready 🚀 launch ✅👍🏽 ©") == ["ready", "launch"]
    assert content_tokens("Step 1️⃣ done ✔️") == ["step", "1", "done"]  # presentation marks go with their emoji
    assert content_tokens("🚀👍 🎉") == []  # nothing left to compare: the lexical judge leaves it unmeasured
