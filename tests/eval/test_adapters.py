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
