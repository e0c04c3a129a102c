"""Property-based tests (hypothesis, derandomized: deterministic and offline) for the record readers and the tokenizer.

Readers: any line, any truncation of a valid file, any field deleted or retyped: a reader accepts a record or reports
it (``file:line: ...`` on one line), and a file with no valid record is an InputError; nothing else is ever raised.
Tokenizer: plain ASCII text keeps exactly its historical tokens; words copied from a context are found in it, in any
script."""
from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corpora.errors import InputError
from corpora.jsonl import read_log
from corpora.loaders import load_documents_jsonl, load_questions
from corpora.records import Judgement
from corpora.scripts import non_latin_share
from eval.adapters import load_traces
from eval.judges.lexical import unigram_precision
from eval.meta.datasets import DATASETS, load_records
from eval.tokens import content_tokens

PROPS = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# --- the tokenizer ---------------------------------------------------------------------------------------------
_OLD = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")
_OLD_STOP = frozenset(
    "a an the of to in on for and or is are was were be been it its this that with as by at from what which who how "
    "why when does do did can could should would may might than then there".split())


# the one change since: a number grouped in thousands, in strict groups of three, is one token ('1,024', "1'024" and
# '1_024' are '1024', as '1024' is; '1.234.567' is 1234567 with two or more dot groups; '1,2,4,8' and '0,125' stay
# apart, an address '192.168.100.200' too)
_GROUPED = re.compile(r"(?<![A-Za-z0-9_.,'])(?!(?:25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|"
                      r"1[0-9][0-9]|[1-9]?[0-9])){3}(?![0-9]|\.[0-9]))([1-9][0-9]{0,2})"
                      r"(?:((?:,[0-9]{3})+)(?![0-9]|,[0-9])|((?:'[0-9]{3})+)(?![0-9]|'[0-9])|((?:_[0-9]{3})+)(?![0-9]|_[0-9])"
                      r"|((?:\.[0-9]{3}){2,})(?![0-9]|\.[0-9]))")


def old_tokens(text: str) -> list[str]:
    """content_tokens before issue 12, the reference for ASCII text (with thousands groups written whole)."""
    text = _GROUPED.sub(lambda m: m.group(1) + re.sub(r"[,'_.]", "", next(g for g in m.groups()[1:] if g)), text)
    return [t for t in _OLD.findall(text.lower()) if t not in _OLD_STOP]


@PROPS
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=300))
def test_ascii_text_keeps_exactly_its_old_tokens(text):
    assert content_tokens(text) == old_tokens(text)


@PROPS
@given(st.lists(st.one_of(st.from_regex(r"[1-9][0-9]{0,3}(,[0-9]{1,4}){0,3}(\.[0-9]{1,2})?", fullmatch=True),
                          st.sampled_from(["a", "v", "x", ".", ",", " ", "MB", "-"])), max_size=12).map("".join))
def test_ascii_numbers_with_commas_keep_their_old_tokens_but_for_thousands_groups(text):
    assert content_tokens(text) == old_tokens(text)


@PROPS
@given(st.lists(st.one_of(st.from_regex(r"[1-9][0-9]{0,3}([,'_.][0-9]{1,4}){0,4}", fullmatch=True),
                          st.sampled_from(["a", ".", ",", "'", "_", " ", "-"])), max_size=12).map("".join))
def test_ascii_numbers_with_any_group_mark_keep_their_old_tokens_but_for_thousands_groups(text):
    assert content_tokens(text) == old_tokens(text)


@PROPS
@given(st.text(max_size=300))
def test_any_text_tokenizes_to_nonblank_tokens(text):
    toks = content_tokens(text)
    assert all(t and not any(c.isspace() for c in t) for t in toks)
    assert 0.0 <= non_latin_share(text) <= 1.0


WORD = st.text(st.characters(blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc")), min_size=1, max_size=12)


@PROPS
@given(st.lists(WORD, min_size=1, max_size=8), st.lists(WORD, max_size=8), st.lists(WORD, max_size=8))
def test_words_copied_from_a_context_are_supported_by_it_in_any_script(words, before, after):
    answer = " ".join(words)
    context = " ".join([*before, answer, *after])
    assert set(content_tokens(answer)) <= set(content_tokens(context))
    if content_tokens(answer):
        assert unigram_precision(context, answer) == 1.0


def test_scripts_without_spaces_and_emoji():
    assert content_tokens("东京是日本的首都") == list("东京是日本的首都")
    assert content_tokens("القاهرة هي عاصمة مصر") == ["القاهرة", "هي", "عاصمة", "مصر"]
    assert content_tokens("Ready 🚀 launch ✅👍🏽") == ["ready", "launch"]  # emoji and symbols are no words
    assert content_tokens("ＧＰＵ ｖ２") == ["gpu", "v2"]  # full-width forms read as their ASCII
    assert content_tokens("The KV cache (v1.2) is 25.5 GB.") == ["kv", "cache", "v1.2", "25.5", "gb"]


# --- the readers -----------------------------------------------------------------------------------------------
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                    max_leaves=6)
FIELDS = ["id", "_id", "text", "title", "metadata", "question", "contexts", "answer", "reference", "relevant_ids",
          "relevant_doc_ids", "outcome", "user_input", "retrieved_contexts", "response", "sample_id", "evidence",
          "label", "claim", "context", "document", "context_relevant", "faithful", "answer_relevant", "knowledge",
          "right_answer", "hallucinated_answer", "chunk_id", "rank", "score"]
RECORD = st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=8)
LINE = st.one_of(RECORD.map(lambda d: json.dumps(d).encode()), st.text(max_size=60).map(str.encode),
                 st.binary(max_size=60))
VALID = {
    "eval": [{"id": "a", "question": "Q?", "contexts": ["ctx one", {"id": "c", "text": "t", "rank": 2}],
              "answer": "A.", "reference": "R.", "relevant_ids": ["d"]},
             {"user_input": "Q?", "retrieved_contexts": ["c"], "response": "A", "reference": "R"}],
    "docs": [{"id": "a", "text": "alpha", "title": "T", "metadata": {"k": 1}}, {"_id": "b", "text": "beta"}],
    "questions": [{"id": "q", "question": "Q?", "reference": "R", "relevant_doc_ids": ["a"], "metadata": {}}],
    "ares": [{"question": "q", "context": "c", "answer": "a", "context_relevant": 1, "faithful": 0,
              "answer_relevant": 1}],
    "wice": [{"claim": "c", "evidence": ["e"], "label": "supported"}],
    "halueval": [{"knowledge": "k", "question": "q", "right_answer": "r", "hallucinated_answer": "h"}],
    "jsonl": [{"evidence": "e", "text": "t", "label": 0.5}],
}
READERS = {
    "eval": lambda p, errs: load_traces(p, warnings=[])[0],
    "docs": lambda p, errs: load_documents_jsonl(p, errors=errs),
    "questions": lambda p, errs: load_questions(p, errs),
    **{d: (lambda d: lambda p, errs: load_records(d, p, errs))(d) for d in DATASETS},
}


def read_or_report(kind: str, data: bytes) -> None:
    """The property: accepted records, or one-line reports, or an InputError; never anything else."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "in.jsonl"
        path.write_bytes(data)
        errors: list[InputError] = []
        try:
            READERS[kind](path, errors)
        except InputError as exc:
            assert "\n" not in str(exc) and str(path) in str(exc)
            return
        assert all(isinstance(e, InputError) and "\n" not in str(e) and str(path) in str(e) for e in errors)


@PROPS
@given(st.sampled_from(sorted(READERS)), st.lists(LINE, max_size=6))
def test_readers_accept_or_report_random_lines(kind, lines):
    read_or_report(kind, b"\n".join(lines))


@PROPS
@given(st.sampled_from(sorted(READERS)), st.integers(min_value=0, max_value=10_000), st.integers(0, 2))
def test_readers_accept_or_report_any_truncation_of_a_valid_file(kind, cut, copies):
    data = "".join(json.dumps(r) + "\n" for r in VALID[kind] * (copies + 1)).encode()
    read_or_report(kind, data[: cut % (len(data) + 1)])


@PROPS
@given(st.sampled_from(sorted(READERS)), st.data())
def test_readers_accept_or_report_a_deleted_or_retyped_field(kind, data):
    rows = []
    for rec in VALID[kind]:
        rec = dict(rec)
        key = data.draw(st.sampled_from(sorted(rec)))
        if data.draw(st.booleans()):
            del rec[key]
        else:
            rec[key] = data.draw(JSON)
        rows.append(rec)
    read_or_report(kind, "".join(json.dumps(r) + "\n" for r in rows).encode())


@PROPS
@given(st.integers(min_value=0, max_value=5_000), st.binary(max_size=40))
def test_a_run_log_with_a_torn_or_garbled_tail_is_read_or_refused(cut, garbage):
    line = Judgement(sample_id="s", eval_hash="e", sample_hash="h").model_dump_json()
    data = (line + "\n") * 3
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "results.jsonl"
        path.write_bytes(data.encode()[: cut % (len(data) + 1)] + garbage)
        try:
            got = read_log(path, Judgement, what="results log")
        except InputError as exc:
            assert "not a ragdoctor results log" in str(exc)
            return
        assert all(j.sample_id == "s" for j in got)
