"""Citation marks that name no chunk id (rag/prompt.strip_footnotes, strip_citations(footnotes=True)): dropped when
they close a statement, kept when the bracket is part of it."""
import pytest

from rag.prompt import strip_citations, strip_footnotes


@pytest.mark.parametrize("cited,plain", [
    ("Paris is in France [1].", "Paris is in France."),
    ("Paris is in France [1, 2]; Berlin is in Germany [3-4].", "Paris is in France; Berlin is in Germany."),
    ("Paris is in France [1][2] and Berlin is not [3].", "Paris is in France and Berlin is not."),
    ("Paris is in France (source: atlas).", "Paris is in France."),
    ("Paris is in France [doc1].", "Paris is in France."),
    ("Paris is in France [source: doc1].", "Paris is in France."),
    ("Paris is in France [Sources: wiki, atlas].", "Paris is in France."),
    ("Paris is in France [Smith et al., 2020].", "Paris is in France."),
    ("Paris is in France (Lee, 2019).", "Paris is in France."),
    ("Paris is in France (see doc1).", "Paris is in France."),
    ("Paris is in France^[1].", "Paris is in France."),
    ("Paris is in France[^1].", "Paris is in France."),
    ("東京は首都です【1】。", "東京は首都です。"),
    ("Paris is in France \u30104:0\u2020source\u3011.", "Paris is in France."),
    ("Paris is in France. [1]\nBerlin is in Germany. [2]", "Paris is in France.\nBerlin is in Germany."),
    ("Sources: [doc1], [doc2].", "Sources:."),
    ("[1][2]", ""),
])
def test_footnotes_are_dropped(cited, plain):
    assert strip_footnotes(cited) == plain
    assert strip_citations(cited, footnotes=True) == plain


@pytest.mark.parametrize("text", [
    "Scores lie in [0, 1].", "Ratings lie in [1, 10].", "It is in the interval [2, 5].", "Take x[3].",
    "It is array[3].", "The fact [citation needed] is old.", "Fact [citation needed].", "[1] Paris is big.",
    "See [fixed in PR#45].", "As [3] shows, it works.", "Orca (OSDI 2022) is a paper.", "The weights are [0.5, 1].",
    "Use (see below) this.",
])
def test_bracketed_content_stays(text):
    assert strip_footnotes(text) == text


def test_the_default_still_strips_chunk_ids_only():
    assert strip_citations("It is 8 [a#1] and see [1].") == "It is 8 and see [1]."
    assert strip_citations("It is 8 [a#1] and see [1].", footnotes=True) == "It is 8 and see."
