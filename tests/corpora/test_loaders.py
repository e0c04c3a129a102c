import gzip
import json

import pytest

from corpora.bundled import bundled_documents, bundled_questions, planted
from corpora.errors import InputError
from corpora.loaders import load_beir, load_corpus, load_documents_folder, load_documents_jsonl, load_questions


def _write(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_jsonl_documents_and_beir_style_ids(tmp_path):
    p = _write(tmp_path / "c.jsonl", ['{"id": "a", "text": "alpha"}', '', '{"_id": "b", "title": "B", "text": "beta", "year": 2020}'])
    docs = load_documents_jsonl(p)
    assert [d.id for d in docs] == ["a", "b"]
    assert docs[1].metadata == {"year": 2020}


GOOD = '{"id": "g", "text": "good"}'


@pytest.mark.parametrize("lines, line, needle", [
    (['{"id": "a", "text": "x"}', '{"id": "b", "text": '], 2, "malformed JSON"),
    (['{"id": "a"}'], 1, "field 'text': missing required field"),
    (['{"id": "a", "text": "  "}'], 1, "field 'text': empty text"),
    (['{"id": "a", "text": "x"}', '{"id": "a", "text": "y"}'], 2, "field 'id': duplicate document id 'a'"),
    (['[1, 2]'], 1, "expected a JSON object"),
    (['{"id": "a", "text": NaN}'], 1, "NaN is not a JSON number"),
    (['{"id": "a", "id": "b", "text": "x"}'], 1, "duplicate key 'id'"),
])
def test_jsonl_bad_line_is_reported_and_skipped_the_rest_is_read(tmp_path, lines, line, needle):
    p = _write(tmp_path / "bad.jsonl", [*lines, GOOD])
    errors: list[InputError] = []
    docs = load_documents_jsonl(p, errors=errors)
    assert docs[-1].id == "g" and len(errors) == 1
    msg = str(errors[0])
    assert msg.startswith(f"{p}:{line}: ") and needle in msg and "\n" not in msg


def test_a_file_with_no_valid_line_is_an_error_naming_the_first_bad_line(tmp_path):
    p = _write(tmp_path / "bad.jsonl", ['{"id": "a"}', "[1]"])
    with pytest.raises(InputError) as err:
        load_documents_jsonl(p, errors=[])
    assert str(err.value) == (f"{p}: no valid documents (2 bad lines skipped; first: line 1: field 'text': "
                              "missing required field)")
    with pytest.raises(InputError, match="is a folder, not a file"):
        load_documents_jsonl(tmp_path)


def test_skipped_lines_are_reported_when_no_list_is_given(tmp_path, caplog):
    p = _write(tmp_path / "c.jsonl", ['{"id": "a"}', GOOD])
    assert [d.id for d in load_documents_jsonl(p)] == ["g"]
    assert f"skipped bad record: {p}:1: field 'text': missing required field" in caplog.text


def test_non_utf8_is_reported_with_line(tmp_path):
    p = tmp_path / "latin1.jsonl"
    p.write_bytes(b'\xef\xbb\xbf{"id": "a", "text": "ok"}\n{"id": "b", "text": "caf\xe9"}\n')  # a BOM is fine
    errors: list[InputError] = []
    assert [d.id for d in load_documents_jsonl(p, errors=errors)] == ["a"]
    assert str(errors[0]).startswith(f"{p}:2: not valid UTF-8")


def test_folder_of_text_files(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "one.md").write_text("# Title one\n\nBody.", encoding="utf-8")
    (tmp_path / "sub" / "two.txt").write_text("Plain text two.", encoding="utf-8")
    (tmp_path / "skip.bin").write_bytes(b"\x00")
    docs = load_documents_folder(tmp_path)
    assert [(d.id, d.title) for d in docs] == [("one.md", "Title one"), ("sub/two.txt", "Plain text two.")]
    assert load_corpus(tmp_path)[0].id == "one.md"


def test_folder_errors(tmp_path):
    with pytest.raises(InputError, match="no readable .txt"):
        load_documents_folder(tmp_path)
    (tmp_path / "bad.txt").write_bytes(b"line one\nline \xff two")
    (tmp_path / "good.txt").write_text("fine")
    errors: list[InputError] = []
    assert [d.id for d in load_documents_folder(tmp_path, errors)] == ["good.txt"]
    assert "bad.txt:2: not valid UTF-8" in str(errors[0])


def test_beir_folder(tmp_path):
    with gzip.open(tmp_path / "corpus.jsonl.gz", "wt") as fh:
        fh.write('{"_id": "d1", "title": "T", "text": "one"}\n{"_id": "d2", "title": "", "text": "two"}\n'
                 '{"_id": "d3", "title": "Only a title", "text": ""}\n{"_id": "d4", "title": "", "text": " "}\n')
    _write(tmp_path / "queries.jsonl", ['{"_id": "q1", "text": "first?"}', '{"_id": "q2", "text": "no labels"}'])
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td2\t2\nq1\td1\t0\n")
    docs, samples = load_beir(tmp_path)
    assert [(d.id, d.text) for d in docs] == [("d1", "one"), ("d2", "two"), ("d3", "Only a title")]
    assert [(s.id, s.relevant_doc_ids) for s in samples] == [("q1", ["d2"])]
    assert samples[0].metadata["qrels"] == {"d2": 2, "d1": 0}
    with pytest.raises(InputError, match="qrels split 'dev' not found"):
        load_beir(tmp_path, split="dev")
    (tmp_path / "qrels" / "bad.tsv").write_text("q1\td1\tx\n")
    from corpora.loaders import load_qrels
    with pytest.raises(InputError, match=r"bad.tsv:1: field 'score'"):
        load_qrels(tmp_path / "qrels" / "bad.tsv")


def test_questions_bad_lines_are_skipped_and_named(tmp_path):
    p = _write(tmp_path / "q.jsonl", [json.dumps({"id": "q1", "question": "x?"}), json.dumps({"id": "q2"}),
                                      json.dumps({"id": "q1", "question": "again?"}),
                                      json.dumps({"id": "q3", "question": "  "})])
    errors: list[InputError] = []
    assert [q.id for q in load_questions(p, errors)] == ["q1"]
    assert [str(e).split(": ", 1)[1] for e in errors] == [
        "field 'question': missing required field",
        "field 'id': duplicate question id 'q1' (first on line 1; this one is skipped)",
        "field 'question': is blank"]


def test_bundled_corpus_shape_and_planted_trouble():
    docs, questions = bundled_documents(), bundled_questions()
    assert len(docs) >= 50 and len(questions) >= 80
    ids = {d.id for d in docs}
    for q in questions:
        assert set(q.relevant_doc_ids or []) <= ids, q.id
        assert q.reference
    kinds = {}
    for q in questions:
        kinds[q.metadata["kind"]] = kinds.get(q.metadata["kind"], 0) + 1
    assert kinds["conflict"] >= 5 and kinds["unanswerable"] >= 3 and kinds["injection"] >= 1
    p = planted(docs)
    assert len(p["outdated"]) >= 5 and len(p["outdated"]) == len(p["current"])
    assert len(p["near_duplicate"]) >= 2 and len(p["prompt_injection"]) == 1
    for q in questions:
        if q.metadata["kind"] == "conflict":
            assert q.metadata["outdated_doc_id"] in p["outdated"]
            assert not set(q.relevant_doc_ids) & set(p["outdated"])
        if q.metadata["kind"] == "unanswerable":
            assert q.relevant_doc_ids == [] and q.answerable is False


def test_a_file_name_that_is_not_utf8_is_reported_and_skipped(tmp_path):
    import os

    from corpora.errors import InputError
    from corpora.loaders import load_corpus

    (tmp_path / "a.txt").write_text("good words here", encoding="utf-8")
    with open(os.path.join(os.fsencode(tmp_path), b"n\xe9m.txt"), "wb") as fh:  # a Latin-1 name on a UTF-8 system
        fh.write(b"hi")
    errors: list[InputError] = []
    docs = load_corpus(str(tmp_path), errors=errors)
    assert [d.id for d in docs] == ["a.txt"] and len(errors) == 1
    assert "the file name is not valid UTF-8" in str(errors[0]) and str(errors[0]).isascii()


def test_a_beir_folder_without_its_corpus_is_refused_not_read_as_text_files(tmp_path):
    import pytest

    from corpora.errors import InputError
    from corpora.loaders import load_corpus

    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    (tmp_path / "README.md").write_text("# the dataset's readme\n")
    with pytest.raises(InputError, match="a BEIR folder \\(qrels/\\) without corpus.jsonl"):
        load_corpus(str(tmp_path))


def test_qrels_grades_are_whole_numbers_and_a_bom_is_no_header_problem(tmp_path):
    from corpora.loaders import load_qrels

    path = tmp_path / "q.tsv"
    path.write_bytes("\ufeffquery-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t1.0\n".encode())
    assert load_qrels(path) == {"q1": {"d1": 2, "d2": 1}}
    for bad in ("0.5", "inf", "nan", "1.7"):  # 0.5 once read as 0 (not relevant) in silence, inf as a crash
        path.write_text(f"q1\td1\t{bad}\n")
        with pytest.raises(InputError, match=rf"q\.tsv:1: field 'score': score '{bad}' is not a whole-number"):
            load_qrels(path)


def test_a_beir_query_id_twice_is_reported_and_qrels_without_a_query_are_said(tmp_path, caplog):
    (tmp_path / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "text": "One."}) + "\n")
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "first?"}) + "\n"
                                            + json.dumps({"_id": "q1", "text": "second?"}) + "\n")
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("q1\td1\t1\nq9\td1\t1\n")
    caplog.set_level("WARNING")
    _, queries = load_beir(tmp_path, "test")
    assert [q.question for q in queries] == ["first?"]
    text = caplog.text
    assert "queries.jsonl:2: field 'id': duplicate query id 'q1'" in text
    assert "1 query id(s) with qrels are not among the queries read from queries.jsonl (first: 'q9')" in text


@pytest.mark.parametrize("metadata, extra, why", [
    ({"qrels": {"d1": "1"}}, {}, "qrels must be an object of document id -> whole-number grade"),
    ({"qrels": ["d1"]}, {}, "qrels must be an object"),
    ({"qrels": {"d1": True}}, {}, "qrels must be an object"),
    ({"qrels": {"d1": 1}}, {"relevant_doc_ids": ["d2"]}, r"qrels names \['d1'\] relevant .* relevant_doc_ids is"),
])
def test_graded_labels_on_a_question_are_checked(tmp_path, metadata, extra, why):
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"id": "a", "question": "What is it?", "metadata": metadata, **extra}) + "\n")
    with pytest.raises(InputError, match=rf"q\.jsonl: no valid questions .*line 1: field 'metadata': {why}"):
        load_questions(path)
