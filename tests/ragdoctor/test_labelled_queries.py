"""Which labelled queries the lab commands measure with (ragdoctor/labelled_queries.py): --split is read only from a
BEIR folder's qrels, and a split that is not there is named, never replaced by other queries."""
import json

import pytest

from corpora.errors import UsageError
from ragdoctor.cli import main
from ragdoctor.labelled_queries import labelled_queries


@pytest.fixture
def beir(tmp_path):
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    docs = [{"_id": f"d{i}", "title": f"T{i}", "text": f"document {i} about topic {i}"} for i in range(3)]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    qs = [{"_id": "q1", "text": "what is topic 1?"}, {"_id": "q2", "text": "what is topic 2?"}]
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    return folder


def test_a_beir_split_is_read_by_name(beir):
    found = labelled_queries(str(beir), None, "test", own_index=True)
    assert found is not None and found.ids == ["q1", "q2"] and found.qrels["q1"] == {"d1": 1}
    assert found.source.endswith("test queries")


def test_a_split_that_is_not_there_is_named_with_the_ones_that_are(beir):
    with pytest.raises(UsageError, match=r"qrels/train\.tsv: file not found \(splits there: test\)"):
        labelled_queries(str(beir), None, None, own_index=True)  # the default split, train, is missing here
    with pytest.raises(UsageError, match=r"qrels/tset\.tsv: file not found \(splits there: test\)"):
        labelled_queries(str(beir), None, "tset", own_index=True)


def test_split_where_no_beir_qrels_are_read_is_a_usage_error(beir, tmp_path):
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "a", "question": "Q?", "relevant_doc_ids": ["d1"]}) + "\n")
    with pytest.raises(UsageError, match="--split: only a BEIR corpus's own queries read it, and --questions is given"):
        labelled_queries(str(beir), str(tmp_path / "q.jsonl"), "test", own_index=True)
    with pytest.raises(UsageError, match="--split: .* bundled is not a BEIR folder"):
        labelled_queries("bundled", None, "test", own_index=True)
    assert labelled_queries("bundled", None, None, own_index=True).source == "bundled questions"


def test_index_lab_refuses_split_on_the_bundled_corpus_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["index-lab", "--out", "lab.json", "--embedder", "fake", "--index-dir", "idx", "--split", "test"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--split: only a BEIR corpus's own queries read it" in err
    assert not (tmp_path / "lab.json").exists() and not (tmp_path / "idx").exists()  # refused before any index


def test_queries_without_a_relevant_document_are_left_out_and_said(beir, tmp_path, caplog):
    """A query whose every grade is 0 (or that has no labels) has no nDCG: left out with a warning, not averaged in
    as NaN; --max-queries then counts labelled queries only. None labelled: refused in one line."""
    (beir / "qrels" / "test.tsv").write_text("q1\td1\t1\nq2\td2\t0\n")
    caplog.set_level("WARNING")
    found = labelled_queries(str(beir), None, "test", own_index=True)
    assert found.ids == ["q1"] and "1 of 2 questions name no relevant document" in caplog.text
    everything = labelled_queries(str(beir), None, "test", own_index=True, labelled_only=False)
    assert everything.ids == ["q1", "q2"]  # the index lab times every query, labelled or not
    (beir / "qrels" / "test.tsv").write_text("q1\td1\t0\nq2\td2\t0\n")
    with pytest.raises(UsageError, match="no question names a relevant document"):
        labelled_queries(str(beir), None, "test", own_index=True)
    found.qrels["q1"] = {"d1": 1, "nope": 2}
    found.warn_unknown({"d0", "d1", "d2"})
    assert "1 relevant id(s) name no document or chunk of the corpus ('nope')" in caplog.text


@pytest.mark.parametrize(("data", "suffix"), [
    ("What does the KV cache store?\nWhat is ZeRO?\n", ".txt"),
    ("id,question\nq1,What does the KV cache store?\n", ".csv"),
    ('[{"id": "q1", "question": "What does the KV cache store?"}]\n', ".json"),
], ids=["plain-text", "csv", "json-array"])
def test_a_questions_file_that_is_not_jsonl_is_refused_as_run_refuses_it(tmp_path, data, suffix):
    from corpora.errors import InputError

    path = tmp_path / f"qs{suffix}"
    path.write_text(data)
    with pytest.raises(InputError, match="not a question set: expected JSONL, one JSON object a line") as exc:
        labelled_queries("bundled", str(path), None, own_index=True)
    assert str(exc.value).startswith(f"{path}: ") and "line 1: " in str(exc.value)


def test_a_question_file_asking_one_text_under_two_ids_is_warned_about_as_run_does(tmp_path, caplog):
    """Both labs read their --questions file here: the repeated-text warning is `ragdoctor run`'s own
    (rag.session.warn_repeated_texts), given once; a set without repeats gives none."""
    rows = [{"id": "a", "question": "What is ZeRO?", "relevant_doc_ids": ["d1"]},
            {"id": "b", "question": "what is  zero?", "relevant_doc_ids": ["d1"]},
            {"id": "c", "question": "What is LoRA?", "relevant_doc_ids": ["d2"]}]
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    caplog.set_level("WARNING")
    found = labelled_queries("bundled", str(tmp_path / "q.jsonl"), None, own_index=True)
    assert found is not None and found.ids == ["a", "b", "c"]
    warned = [r.getMessage() for r in caplog.records if "ask again what another id asks" in r.getMessage()]
    assert len(warned) == 1 and "1 question(s)" in warned[0] and "'b' repeats 'a'" in warned[0], warned
    caplog.clear()
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in (rows[0], rows[2])))
    labelled_queries("bundled", str(tmp_path / "q.jsonl"), None, own_index=True)
    assert not [r for r in caplog.records if "ask again" in r.getMessage()]
