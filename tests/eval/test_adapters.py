"""Every external format adapted into a Trace at the edge (eval/adapters.py)."""
import json

import pytest

from corpora.errors import InputError
from corpora.records import Trace
from eval.adapters import load_traces, parse_row, traces_from

CTX = [{"id": "kv#0", "doc_id": "kv", "text": "The KV cache stores keys and values."}]


def test_generic_and_ragas_rows_become_traces():
    t = parse_row({"id": 7, "question": "Q?", "contexts": ["a", {"text": "b", "rank": 4, "doc_id": 12}],
                   "answer": "A.", "relevant_ids": ["12"], "metadata": {"kind": "factoid"}}, "line1")
    assert t.sample_id == "7" and [c.chunk_id for c in t.chunks] == ["ctx1", "ctx2"] and t.chunks[1].doc_id == "12"
    assert t.chunks[1].rank == 4 and t.relevant_doc_ids == ["12"] and t.metadata == {"kind": "factoid"}
    r = parse_row({"user_input": "Q?", "retrieved_contexts": ["x"], "response": "A.", "reference": "R."}, "line2")
    assert (r.sample_id, r.answer, r.reference, r.context_texts) == ("line2", "A.", "R.", ["x"])


def test_a_row_without_contexts_says_nothing_and_a_trace_with_none_found_says_nothing_was_found():
    for value in (None, []):
        assert parse_row({"question": "Q?", "contexts": value}, "l").contexts is None
    assert parse_row({"question": "Q?"}, "l").contexts is None
    trace = Trace(sample_id="s", question="Q?", contexts=[]).model_dump(mode="json")
    assert parse_row(trace, "l").contexts == []


def test_a_file_reports_bad_lines_duplicates_and_unknown_fields(tmp_path):
    path = tmp_path / "in.jsonl"
    rows = [{"id": "a", "question": "Q?", "contexts": CTX, "answer": "A."}, {"id": "a", "question": "Again?"},
            {"id": "b", "question": "Q?", "refrence": "typo"}, {"id": "c"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    warnings: list[str] = []
    traces, errors = load_traces(path, warnings)
    assert [t.sample_id for t in traces] == ["a", "b"]
    assert [(e.line, e.field) for e in errors] == [(2, "id"), (4, "question")]
    assert any("field 'refrence' is not one ragdoctor reads" in w for w in warnings)


def test_objects_dicts_and_a_row_that_is_not_a_record(tmp_path):
    traces, errors = traces_from([{"question": "Q?", "contexts": CTX, "answer": "A.", "reference": float("nan")}])
    assert traces[0].reference is None and errors == []  # a missing DataFrame cell is NaN
    with pytest.raises(InputError, match="row 1 is a int"):
        traces_from([5])


def test_rows_are_read_as_their_fields_say_and_conflicts_are_refused():
    """Audit, session 26: every one of these was picked or dropped in silence before."""
    import numpy as np

    from eval.adapters import FieldError

    # explicit ranks are the order (precision@k and AP read it); numpy numbers, whole floats and null rank are fine
    t = parse_row({"question": "Q?", "contexts": [{"text": "b", "rank": np.int64(2), "score": np.float32(0.5)},
                                                  {"text": "a", "rank": 1.0}, {"text": "c", "rank": None}]}, "l")
    assert [(c.text, c.rank) for c in t.chunks] == [("a", 1), ("b", 2), ("c", 3)] and t.chunks[1].score == 0.5
    with pytest.raises(FieldError, match="two contexts have rank 1"):
        parse_row({"question": "Q?", "contexts": [{"text": "a", "rank": 1}, {"text": "b", "rank": 1}]}, "l")
    # one chunk id twice: citations and per-chunk verdicts would be ambiguous (named at the second)
    with pytest.raises(FieldError, match="chunk id 'kv#0' used twice") as exc:
        parse_row({"question": "Q?", "contexts": [{"text": "a", "id": "kv#0"}, {"text": "b", "id": "kv#0"}]}, "l")
    assert exc.value.field == "contexts[1].id"
    # a trace row: contexts read in rank order, one id once
    t = parse_row({"sample_id": "s", "question": "Q?", "contexts": [
        {"chunk_id": "b", "rank": 2, "text": "b"}, {"chunk_id": "a", "rank": 1, "text": "a"}]}, "l")
    assert [c.chunk_id for c in t.chunks] == ["a", "b"]
    with pytest.raises(ValueError, match="two contexts have chunk id 'a'"):
        parse_row({"sample_id": "s", "question": "Q?", "contexts": [
            {"chunk_id": "a", "rank": 2, "text": "b"}, {"chunk_id": "a", "rank": 1, "text": "a"}]}, "l")
    # graded labels: read alone (their grade > 0 documents are the relevant ones), checked for shape
    assert parse_row({"question": "Q?", "metadata": {"qrels": {"a": 2, "b": 0}}}, "l").relevant_doc_ids == ["a"]
    with pytest.raises(FieldError, match="qrels must be an object") as bad:
        parse_row({"question": "Q?", "metadata": {"qrels": {"a": "high"}}}, "l")
    assert bad.value.field == "metadata.qrels"
    with pytest.raises(FieldError, match="qrels names"):
        parse_row({"question": "Q?", "relevant_ids": ["b"], "metadata": {"qrels": {"a": 1}}}, "l")
    # two relevance labels that disagree
    with pytest.raises(FieldError, match="relevant_ids and relevant_doc_ids name different documents"):
        parse_row({"question": "Q?", "relevant_ids": ["d1"], "relevant_doc_ids": ["d9"]}, "l")
    assert parse_row({"question": "Q?", "relevant_ids": ["d1"], "relevant_doc_ids": ["d1"]}, "l").relevant_doc_ids \
        == ["d1"]
    # ragas ids: the retrieved contexts' ids and the reference contexts' ids are the relevance labels
    r = parse_row({"user_input": "Q?", "retrieved_contexts": ["x", "y"], "retrieved_context_ids": ["d2", "d1"],
                   "reference_context_ids": ["d1"], "response": "A."}, "l")
    assert [c.doc_id for c in r.chunks] == ["d2", "d1"] and r.relevant_doc_ids == ["d1"]
    with pytest.raises(FieldError, match="1 ids for 2 retrieved_contexts"):
        parse_row({"user_input": "Q?", "retrieved_contexts": ["x", "y"], "retrieved_context_ids": ["d2"]}, "l")
    # a label that is not a boolean is not read as "no label"
    with pytest.raises(FieldError, match="must be true or false, got 'false'"):
        parse_row({"question": "Q?", "metadata": {"answerable": "false"}}, "l")


def test_llama_index_rows_refuse_fields_they_would_drop_and_keep_the_placeholder_reason():
    class Node:
        node_id, ref_doc_id, metadata = "n1", "d1", {}

        def get_content(self):
            return "The KV cache stores keys and values."

    class Response:
        def __init__(self, text, nodes):
            self.response, self.source_nodes = text, nodes

    ok = Response("Keys and values.", [Node()])
    traces, errors = traces_from([{"question": "Q?", "response": ok, "contexts": ["other text"]},
                                  {"question": "Q?", "user_input": "Other?", "response": ok},
                                  ("Q?", Response("Empty Response", []))])
    assert [e.field for e in errors] == ["contexts", "user_input"]
    (empty,) = traces
    assert empty.outcome == "error" and "placeholder 'Empty Response'" in (empty.error or "")


def test_a_parquet_table_of_rows_is_read_as_rows_not_as_spans(tmp_path):
    import pandas as pd

    rows = [{"user_input": "What does the KV cache store?", "retrieved_contexts": ["The KV cache stores keys."],
             "response": "Keys.", "reference": "Keys."},
            {"user_input": "", "retrieved_contexts": ["x"], "response": "y"}]
    pd.DataFrame(rows).to_parquet(tmp_path / "ragas.parquet")
    traces, errors = load_traces(tmp_path / "ragas.parquet")
    assert [t.question for t in traces] == ["What does the KV cache store?"] and traces[0].context_texts == [
        "The KV cache stores keys."]
    assert [e.one_line() for e in errors] == [f"{tmp_path / 'ragas.parquet'}:2: field 'user_input': is blank"]
    (tmp_path / "bad.parquet").write_text("garbage")
    with pytest.raises(InputError, match="cannot be read as parquet"):
        load_traces(tmp_path / "bad.parquet")
