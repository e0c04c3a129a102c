"""Citation marks that name no chunk id (rag/prompt.strip_footnotes, strip_citations(footnotes=True)): dropped when
they close a statement, kept when the bracket is part of it."""
import pytest

from rag.prompt import cited_ids, strip_citations, strip_footnotes


@pytest.mark.parametrize("cited,plain", [
    ("Paris is in France [1].", "Paris is in France."),
    ("Paris is in France [1, 2]; Berlin is in Germany [3-4].", "Paris is in France; Berlin is in Germany."),
    ("Paris is in France [1][2] and Berlin is not [3].", "Paris is in France and Berlin is not."),
    ("Paris is in France (source: atlas).", "Paris is in France."),
    ("Paris is in France [doc1].", "Paris is in France."),
    ("Paris is in France [source: doc1].", "Paris is in France."),
    ("Paris is in France [Sources: wiki, atlas].", "Paris is in France."),
    ("Paris is in France [Smith et al., 2020].", "Paris is in France."),
    ("Paris is in France (Lee et al., 2019).", "Paris is in France."),
    ("Paris is in France (Lee and Kim, 2019).", "Paris is in France."),
    ("Paris is in France (Lee & Kim, 2019).", "Paris is in France."),
    ("Paris is in France (Lee, 2019; Kim, 2020).", "Paris is in France."),
    ("Paris is in France [Lee & Kim, 2019].", "Paris is in France."),
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
    # one name and a year in round brackets is as often a place or a date as an author: a fact, kept
    "The summit was held (Paris, 2024).", "It was released (March, 2023).", "Paris is in France (Lee, 2019).",
])
def test_bracketed_content_stays(text):
    assert strip_footnotes(text) == text


def test_the_default_still_strips_chunk_ids_only():
    assert strip_citations("It is 8 [a#1] and see [1].") == "It is 8 and see [1]."
    assert strip_citations("It is 8 [a#1] and see [1].", footnotes=True) == "It is 8 and see."


def test_bracketed_values_and_names_are_kept_where_a_citation_would_close_the_sentence():
    """A review of the first version: a letters-and-digits token or a number list in brackets at a sentence's end was
    dropped as a citation, deleting the fact ("[H100]", "[3, 224, 224]", "the first element is [1]")."""
    from eval.claims import decompose

    for kept in ("It runs on an NVIDIA GPU [H100].", "The chemical formula is [H2O].", "Set the flag to [x86_64].",
                 "The scores were [1, 2].", "The array has shape [3, 224, 224].", "The first element is [1].",
                 "Valid options are [a1], [b2]."):
        assert decompose(kept) == [kept], kept
    for cited, claim in (("Paris is the capital of France [1].", "Paris is the capital of France."),
                         ("Paris is big [doc1].", "Paris is big."), ("Paris is big [S3, S4].", "Paris is big."),
                         ("Paris is big [1, 2].", "Paris is big."), ("Paris is big [abc#3].", "Paris is big.")):
        assert decompose(cited) == [claim], cited


def test_a_long_run_of_blanks_is_read_at_once():
    """The patterns rescanned a run of spaces or tabs from each of its positions: 50,000 spaces took a minute."""
    import time

    from rag.prompt import strip_footnotes

    start = time.perf_counter()
    assert strip_footnotes("a" + " " * 50_000 + "b") == "a b"
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize("text", [
    # an audit found "It prints torch.Size()." : a bracket inside a call is an argument, a value
    "It prints torch.Size([3]).", "Call f([1, 2]).", "Use np.array([1, 2, 3]).", "Set x = foo([doc1]).",
    "Call dict(a=[1]).", "Call f(x, [1]).", "Call f(x, [doc1]).", "It is big ([1]).", "Use small values (e.g. [1, 2]).",
    "See `arr([1])`.", "It is `[1]`.", "Nest it: x = [[1], [2]].", "The batch is [[1, 2], [3, 4]].",
    # a regex class is no markdown footnote
    "The regex [^0-9] matches non-digits.", "Use [^abc]+ here.", "Use '[^abc]' here.", "Match [^a-zA-Z] chars.",
    "Split on [^\\s].",
])
def test_a_bracket_in_code_or_a_call_stays(text):
    assert strip_footnotes(text) == text
    assert strip_citations(text, footnotes=True) == text


@pytest.mark.parametrize("cited,plain", [
    ("Paris is in France.[1]", "Paris is in France."),  # a footnote after the full stop (Wikipedia's style)
    ("Paris is in France (see [1]).", "Paris is in France."),  # a label says it is a citation
    ("Paris is in France (see [1], [2]).", "Paris is in France."),
    ("Paris is in France[^note-1].", "Paris is in France."),
    ("torch.Size([3]) is what it prints [1].", "torch.Size([3]) is what it prints."),
])
def test_citations_next_to_code_still_go(cited, plain):
    assert strip_footnotes(cited) == plain


@pytest.mark.parametrize("text", [
    "The fix landed in v2.4 [PR#45].", "See [issue#12].", "It was reported [GH#7].", "It merged [MR#3].",
    "It merged upstream [vllm-project/vllm#1234].", "Use HTTP semantics [RFC 9110].", "It was patched [CVE-2024-1234].",
    "The API was added [v2.1].", "It is tracked [JIRA-123].",
])
def test_an_issue_or_change_reference_at_a_sentence_end_is_a_fact(text):
    """'[PR#45]' has a chunk id's shape ('<doc id>#<n>') and was dropped, and the claim lost the PR it names."""
    from eval.claims import decompose

    assert strip_citations(text) == text and strip_citations(text, footnotes=True) == text
    assert decompose(text) == [text]


@pytest.mark.parametrize("cited,plain", [
    ("It is fast [1].", "It is fast."), ("It is fast [2, 3].", "It is fast."), ("It is fast [doc1].", "It is fast."),
    ("It is fast [kv#0].", "It is fast."), ("It is fast [source: x.md].", "It is fast."),
    ("It is fast [docs/kv.md#0].", "It is fast."),  # a folder corpus's chunk id: a path with its suffix
    ("It is fast [abc#3, kv#1].", "It is fast."),
])
def test_citation_marks_still_go_beside_references(cited, plain):
    assert strip_citations(cited, footnotes=True) == plain


def test_a_known_chunk_id_is_a_citation_whatever_its_shape():
    assert strip_citations("It is fast [PR#45].", {"PR#45"}) == "It is fast."
    assert cited_ids("It is fast [PR#45] [kv#0].") == ["kv#0"]
