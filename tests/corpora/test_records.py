"""The records (corpora/records.py): one Trace for every source, the labels read in one place, content hashes, and
the results logs of the earlier version read through Judgement."""
import json

import pytest
from pydantic import ValidationError

from corpora.records import Candidate, Chunk, Judgement, MetricResult, Question, Trace

Q = Question(id="q1", question="What is the default block size?", reference="16 tokens.", relevant_doc_ids=["cur"],
             metadata={"kind": "conflict", "outdated_doc_id": "old"})


def test_a_trace_of_a_question_carries_its_labels():
    t = Trace.of(Q, contexts=[], answer="16.")
    assert (t.sample_id, t.reference, t.relevant_doc_ids, t.metadata) == ("q1", "16 tokens.", ["cur"], Q.metadata)
    assert t.outdated_doc_id == "old" and t.near_duplicate_id is None and t.conflicting_doc_ids == {"old"}
    assert not t.labelled_unanswerable and Trace.of(Q, metadata={"answerable": False}).labelled_unanswerable


def test_contexts_none_means_not_said_and_empty_means_nothing_found():
    said_nothing = Trace(sample_id="a", question="q?")
    assert not said_nothing.has_contexts and said_nothing.chunks == [] and said_nothing.retrieved_doc_ids == []
    found_nothing = Trace(sample_id="a", question="q?", contexts=[])
    assert found_nothing.has_contexts


@pytest.mark.parametrize("blank", ["", "   ", ".", " ?! ", "\u2014", "🚀"])
def test_a_reference_without_a_word_is_no_reference(blank):
    assert Trace(sample_id="s", question="Q?", reference=blank).reference is None
    assert Question(id="q", question="Q?", reference=blank).reference is None
    assert Trace(sample_id="s", question="Q?", reference="键和值").reference == "键和值"  # any script's letters
    assert Trace(sample_id="s", question="Q?", reference=" 42 ").reference == " 42 "  # kept as written


def test_ranking_and_document_ids():
    t = Trace(sample_id="a", question="q?", relevant_doc_ids=["d2"],
              contexts=[Chunk(chunk_id="d2#0", doc_id="d2", rank=2, text="b"), Chunk(chunk_id="d1#0", doc_id="d1", rank=1,
                                                                                     text="a")],
              candidates=[Candidate(chunk_id="d3#0", doc_id="d3", rank=3)])
    assert t.retrieved_doc_ids == ["d1", "d2"] and [c.rank for c in t.ranked()] == [1, 2, 3] and t.doc_ids_known
    bare = Trace(sample_id="b", question="q?", contexts=[Chunk(chunk_id="ctx1", rank=1, text="x")])
    assert not bare.doc_ids_known and bare.retrieved_doc_ids == ["ctx1"]


def test_content_hash_covers_what_is_judged_not_when():
    t = Trace.of(Q, contexts=[], answer="16.")
    later = t.model_copy(update={"created_at": "2030-01-01", "input_hash": "x", "prompt": [{"role": "user"}]})
    assert t.content_hash() == later.content_hash()
    assert t.content_hash() != t.model_copy(update={"answer": "32."}).content_hash()
    assert Q.content_hash("corpus-1") != Q.content_hash("corpus-2")


def test_records_reject_unknown_fields_and_blank_questions():
    with pytest.raises(ValidationError):
        Trace(sample_id="a", question="q?", refrence="typo")
    with pytest.raises(ValidationError):
        Trace(sample_id="a", question="  ")
    with pytest.raises(ValidationError):
        MetricResult(metric="m", judge="j", value=1.5)


@pytest.mark.parametrize("value", [None, float("nan"), float("inf"), -0.1, 1.5])
def test_a_result_that_says_ok_carries_a_value_in_the_unit_interval(value):
    """status "ok" with no value would be a silent NaN in every mean: refused like NaN and 1.5 (the evaluator makes a
    judge's refused result "judge failed", unmeasured); unmeasured and not applicable carry none."""
    with pytest.raises(ValidationError):
        MetricResult(metric="m", judge="j", value=value, status="ok")
    with pytest.raises(ValidationError):
        MetricResult.model_validate_json(json.dumps({"metric": "m", "judge": "j", "value": None}))  # ok by default
    assert MetricResult(metric="m", judge="j", value=0.0).measured
    assert MetricResult.unmeasured("m", "j", "judge call failed").value is None
    assert MetricResult.not_applicable("m", "j", "no reference").value is None
    assert not MetricResult(metric="m", judge="j", status="unmeasured", reason="r").measured


def test_the_results_of_a_run_written_by_an_earlier_version_still_read():
    from pathlib import Path

    from corpora.run_folder import RunFolder

    run = RunFolder(Path(__file__).resolve().parents[1] / "data" / "legacy_run")
    judgements = run.judgements()
    assert len(judgements) == 20 and all(r.value is not None for j in judgements for r in j.results
                                         if r.status == "ok")
    assert {r.status for j in judgements for r in j.results} >= {"ok", "not_applicable"}


def test_a_judgement_of_the_earlier_version_reads_its_sample_as_a_trace():
    legacy = {"sample_id": "s", "eval_hash": "e", "sample_hash": "h", "results": [],
              "sample": {"id": "s", "question": "Q?", "answer": "A.", "relevant_ids": ["d"], "outcome": "error",
                         "has_contexts": True, "contexts": [{"id": "d#0", "text": "T.", "doc_id": "d", "rank": None}],
                         "metadata": {"kind": "factoid", "error": "boom", "latency_ms": {"total": 5.0},
                                      "candidates": [{"chunk_id": "e#0", "doc_id": "e", "rank": 5, "score": 0.1}]}}}
    j = Judgement.model_validate_json(json.dumps(legacy))
    t = j.trace
    assert t.error == "boom" and t.latency_ms == {"total": 5.0} and t.candidates[0].rank == 5
    assert t.metadata == {"kind": "factoid"} and t.relevant_doc_ids == ["d"] and t.chunks[0].rank == 1
    no_contexts = {**legacy["sample"], "has_contexts": False, "contexts": []}
    assert Judgement.model_validate({**legacy, "sample": no_contexts}).trace.contexts is None
    with pytest.raises(ValidationError):
        Judgement.model_validate({**legacy, "sample": {**legacy["sample"], "contexts": 5}})


def test_a_judgement_stores_its_trace_without_the_prompt():
    t = Trace.of(Q, contexts=[], prompt=[{"role": "user", "content": "long"}])
    dumped = json.loads(Judgement(sample_id="q1", trace=t).model_dump_json())
    assert "prompt" not in dumped["trace"] and Judgement.model_validate(dumped).trace.prompt == []
