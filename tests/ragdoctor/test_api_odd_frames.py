"""`ragdoctor.evaluate` on the DataFrames and row lists users actually pass (eval/adapters.py turns them into traces):
what cannot be read is a one-line InputError naming the row or field, before anything is written; what can is read as
its fields say; a value that cannot be measured is unmeasured with its reason, never a silent 0."""
from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

import ragdoctor
from corpora.errors import InputError
from corpora.records import Chunk, Trace

TEXT = "The KV cache stores keys and values for every token."
ROW = {"id": "kv", "question": "What does the KV cache store?", "contexts": [TEXT], "answer": TEXT,
       "reference": "Keys and values."}


def lexical(data, tmp_path, **kw):
    return ragdoctor.evaluate(data, judges="lexical", out=tmp_path / "run", **kw)


def statuses(result) -> dict[tuple[str, str], str]:
    long = result.to_pandas(long=True)
    return {(r.sample_id, r.metric): r.status for r in long.itertuples()}


# --- defects found by the audit: each of these failed before its fix --------------------------------------------------

def test_a_column_given_twice_is_refused_not_one_of_them_kept_in_silence(tmp_path):
    frame = pd.DataFrame([["Q?", "the first answer", "the second"]], columns=["question", "answer", "answer"])
    with pytest.raises(InputError, match=r"^rows: field 'answer': a column of this name is in the DataFrame twice"):
        lexical(frame, tmp_path)
    assert not (tmp_path / "run").exists()


def test_columns_in_levels_are_refused_in_words(tmp_path):
    frame = pd.DataFrame([["Q?", "A."]], columns=pd.MultiIndex.from_tuples([("question", ""), ("answer", "")]))
    with pytest.raises(InputError, match=r"columns have 2 levels \(a MultiIndex\): flatten them"):
        lexical(frame, tmp_path)


def test_a_column_named_by_a_number_is_an_ignored_field_not_a_type_error(tmp_path):
    frame = pd.DataFrame([[ROW["question"], TEXT, "x"]], columns=["question", "answer", 0])
    result = lexical(frame, tmp_path, metrics="answer_relevance")
    assert [j.sample_id for j in result.judgements] == ["line1"]
    assert result.warnings == ["rows:1: field '0' is not one ragdoctor reads: ignored"]
    result = ragdoctor.evaluate([{**ROW, 1: "x", "z": 2}], judges="lexical", metrics="groundedness",
                                out=tmp_path / "run2")
    assert len(result.judgements) == 1 and len(result.warnings) == 2


def test_an_index_named_as_a_field_is_that_field(tmp_path):
    frame = pd.DataFrame([ROW, {**ROW, "id": "kv2"}]).set_index("id")  # what set_index("id") does to the ids
    result = lexical(frame, tmp_path, metrics="groundedness")
    assert [j.sample_id for j in result.judgements] == ["kv", "kv2"]


def test_pandas_na_and_nat_in_row_dicts_are_missing_values(tmp_path):
    rows = [{**ROW, "answer": pd.NA}, {**ROW, "id": "b", "answer": pd.NaT, "reference": pd.NA},
            {**ROW, "id": "c", "contexts": pd.NA}]
    result = lexical(rows, tmp_path, metrics="groundedness,context_precision")
    assert not result.input_errors
    s = statuses(result)
    assert s[("kv", "groundedness")] == "unmeasured" and s[("kv", "context_precision")] == "ok"
    assert s[("c", "context_precision")] == "unmeasured" and s[("c", "groundedness")] == "unmeasured"
    reason = result.to_pandas(long=True).set_index(["sample_id", "metric"]).loc[("kv", "groundedness"), "reason"]
    assert "empty answer" in reason


def test_metadata_json_cannot_hold_is_a_bad_row_not_a_crash(tmp_path):
    class Mine:
        pass

    rows = [{**ROW, "metadata": {"owner": Mine()}}, {**ROW, "id": "ok"},
            Trace(sample_id="t", question="Q?", contexts=[Chunk(chunk_id="c", text=TEXT, rank=1)], answer=TEXT,
                  metadata={"owner": Mine()})]
    result = lexical(rows, tmp_path, metrics="groundedness")
    assert [j.sample_id for j in result.judgements] == ["ok"]
    assert result.input_errors == [
        f"rows:{n}: field 'metadata.owner': a value of type Mine cannot be written as JSON (give a string, a number, "
        f"a list or an object)" for n in (1, 3)]


def test_a_field_name_off_by_case_or_spaces_is_named(tmp_path):
    frame = pd.DataFrame([{"Question ": ROW["question"], "answer": TEXT}])
    with pytest.raises(InputError, match=r"field 'question': missing required field \(there is a field 'Question ': "
                                         r"field names are exact, in lower case\)"):
        lexical(frame, tmp_path)
    result = lexical(pd.DataFrame([{"question": ROW["question"], "ANSWER": TEXT, "contexts": [TEXT]}]), tmp_path,
                     metrics="groundedness")
    assert result.warnings == ["rows:1: field 'ANSWER' is not one ragdoctor reads: ignored (did you mean 'answer'? "
                               "field names are exact, in lower case)",
                               "nothing was measured (empty answer: no claims to check)"]
    assert statuses(result)[("line1", "groundedness")] == "unmeasured"  # no answer: not a 0


def test_ragas_v01_names_are_named_when_ignored(tmp_path):
    frame = pd.DataFrame([{"question": ROW["question"], "answer": TEXT, "contexts": [TEXT], "ground_truth": "Keys."}])
    result = lexical(frame, tmp_path, metrics="answer_correctness")
    assert result.warnings[0] == ("rows:1: field 'ground_truth' is not one ragdoctor reads: ignored (ragas v0.1's name "
                                  "for 'reference': rename it)")
    assert statuses(result)[("line1", "answer_correctness")] == "not_applicable"
    v02 = pd.DataFrame([{"user_input": ROW["question"], "response": TEXT, "retrieved_contexts": [TEXT],
                         "reference": "Keys and values."}])
    assert lexical(v02, tmp_path / "v02", metrics="answer_correctness").summary()["mean"].tolist() == [1.0]


def test_a_ragas_row_without_its_user_input_names_user_input(tmp_path):
    frame = pd.DataFrame([{"user_input": None, "response": TEXT, "retrieved_contexts": [TEXT]},
                          {"user_input": ROW["question"], "response": TEXT, "retrieved_contexts": [TEXT]}])
    result = lexical(frame, tmp_path, metrics="groundedness")
    assert result.input_errors == ["rows:1: field 'user_input': missing required field"]


def test_a_frame_of_traces_read_by_pandas_read_json_is_read(tmp_path):
    traces = [Trace(sample_id=f"s{i}", question="What does the KV cache store?",
                    contexts=[Chunk(chunk_id="c1", text=TEXT, rank=1)], answer=TEXT) for i in range(2)]
    path = tmp_path / "traces.jsonl"
    path.write_text("".join(t.model_dump_json() + "\n" for t in traces))
    frame = pd.read_json(path, lines=True)  # created_at becomes a Timestamp column
    result = lexical(frame, tmp_path, metrics="groundedness")
    assert [j.sample_id for j in result.judgements] == ["s0", "s1"] and not result.input_errors
    assert result.judgements[0].trace.created_at == traces[0].created_at


# --- already fine: pinned so that they stay so ------------------------------------------------------------------------

def test_contexts_as_arrays_tuples_and_missing_cells(tmp_path):
    buf = io.BytesIO()
    pd.DataFrame([ROW, {**ROW, "id": "two", "contexts": ["Unrelated.", TEXT]}]).to_parquet(buf)
    parquet = pd.read_parquet(io.BytesIO(buf.getvalue()))  # contexts: numpy arrays
    assert isinstance(parquet["contexts"][0], np.ndarray)
    frame = pd.concat([parquet, pd.DataFrame([{**ROW, "id": "tuple", "contexts": (TEXT,)},
                                              {**ROW, "id": "nan", "contexts": float("nan")},
                                              {**ROW, "id": "none", "contexts": None}])], ignore_index=True)
    result = lexical(frame, tmp_path, metrics="groundedness,context_precision")
    traces = {j.sample_id: j.trace for j in result.judgements}
    assert traces["two"].context_texts == ["Unrelated.", TEXT] and traces["tuple"].context_texts == [TEXT]
    s = statuses(result)
    assert s[("nan", "groundedness")] == s[("none", "context_precision")] == "unmeasured"
    assert s[("kv", "groundedness")] == "ok"


@pytest.mark.parametrize(("rows", "message"), [
    ([{**ROW, "contexts": json.dumps([TEXT])}], "field 'contexts': must be a list of strings or of objects"),
    ([{**ROW, "contexts": TEXT}], "field 'contexts': must be a list of strings or of objects"),
    ([{**ROW, "answer": 42}], "field 'answer': must be a string, got int"),
    ([{**ROW, "question": float("nan")}], "field 'question': missing required field"),
    ([{**ROW, "id": pd.Timestamp("2024-01-01")}], "field 'id': must be a string or an integer, got Timestamp"),
    ([{**ROW, "contexts": [TEXT, None]}], r"field 'contexts\[1\]': must be a string or an object"),
])
def test_what_cannot_be_read_is_one_line_naming_row_and_field(tmp_path, rows, message):
    with pytest.raises(InputError, match=f"^rows: no valid records .*line 1: {message}"):
        lexical(pd.DataFrame(rows), tmp_path)
    assert not (tmp_path / "run").exists()


def test_empty_frames_and_a_frame_with_no_rows_are_refused(tmp_path):
    for frame in (pd.DataFrame(), pd.DataFrame(columns=["question", "answer", "contexts"])):
        with pytest.raises(InputError, match="^rows: no records found$"):
            lexical(frame, tmp_path)


def test_dtypes_indexes_ids_and_extra_columns(tmp_path):
    frame = pd.DataFrame([ROW, {**ROW, "id": "b", "reference": None}], index=["x", "x"])  # a non-unique index
    frame = frame.astype({"question": "string[pyarrow]", "answer": "category", "reference": "string[pyarrow]"})
    frame["when"] = pd.Timestamp("2024-01-01")
    frame["metadata"] = [{"at": pd.Timestamp("2024-01-01", tz="UTC"), "n": np.int64(2**62)}, None]
    result = lexical(frame, tmp_path, metrics="groundedness,answer_correctness")
    assert [j.sample_id for j in result.judgements] == ["kv", "b"]
    assert statuses(result)[("b", "answer_correctness")] == "not_applicable"
    assert result.warnings == ["rows:1: field 'when' is not one ragdoctor reads: ignored (here and on 1 more line)"]
    written = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert written[0]["trace"]["metadata"] == {"at": "2024-01-01T00:00:00Z", "n": 2**62}
    again = lexical(frame, tmp_path, metrics="groundedness,answer_correctness")  # resumed: nothing judged twice
    assert len((tmp_path / "run" / "results.jsonl").read_text().splitlines()) == 2 and again.summary().equals(
        result.summary())
    big = pd.DataFrame({"id": np.array([2**64 - 1, 5], dtype=np.uint64), "question": ["Q1?", "Q2?"],
                        "answer": [TEXT, TEXT]})
    assert [j.sample_id for j in lexical(big, tmp_path / "big", metrics="answer_relevance").judgements] == [
        str(2**64 - 1), "5"]


def test_duplicate_ids_keep_the_first_and_a_generator_of_dicts_is_read(tmp_path):
    result = lexical(pd.DataFrame([ROW, ROW]), tmp_path, metrics="groundedness")
    assert len(result.judgements) == 1
    assert result.input_errors == ["rows:2: field 'id': duplicate id 'kv' (first on line 1; this line is skipped)"]
    gen = ({**ROW, "id": f"g{i}"} for i in range(2))
    assert [j.sample_id for j in lexical(gen, tmp_path / "gen", metrics="groundedness").judgements] == ["g0", "g1"]
