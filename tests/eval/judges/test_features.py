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
