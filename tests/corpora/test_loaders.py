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
    with pytest.raises(InputError, match=r"bad.tsv: no valid qrels rows \(1 bad line skipped; first: line 1: field 'score'"):
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
        with pytest.raises(InputError, match=rf"q\.tsv: no valid qrels .*line 1: field 'score': score '{bad}' is not a whole"):
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


# --- audit of the corpus loaders: qrels rows, folder walks, BEIR via --corpus, unknown keys, titles, empty texts ---


def test_a_bad_qrels_row_is_reported_and_skipped_the_rest_is_read(tmp_path, caplog):
    """A row of 2 columns stopped the whole command (exit 2), a Latin-1 row was an internal UnicodeDecodeError."""
    from corpora.loaders import load_qrels

    path = tmp_path / "q.tsv"
    path.write_bytes(b"query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\nq\xe9\td3\t1\nq3\td3\t2\n")
    errors: list[InputError] = []
    assert load_qrels(path, errors) == {"q1": {"d1": 1}, "q3": {"d3": 2}}
    assert [str(e) for e in errors] == [
        f"{path}:3: expected 3 tab-separated columns (query-id, corpus-id, score), got 2",
        f"{path}:4: not valid UTF-8 (byte 1)"]
    path.write_bytes(b"q\xe9\td1\t1\n")  # no valid row: one line naming the file and the first bad line
    with pytest.raises(InputError, match=r"q\.tsv: no valid qrels rows \(1 bad line skipped; first: line 1: not valid"):
        load_qrels(path)
    # through a BEIR folder: reported (file:line) and skipped, the other queries are read
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "text": "one"}\n{"_id": "d3", "text": "three"}\n')
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "a?"}\n{"_id": "q3", "text": "b?"}\n')
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_bytes(b"q1\td1\t1\nq1\td3\nq3\td3\t1\n")
    caplog.set_level("WARNING")
    assert [q.id for q in load_beir(tmp_path)[1]] == ["q1", "q3"]
    assert "skipped bad record: " + str(tmp_path / "qrels" / "test.tsv") + ":2: expected 3" in caplog.text


def test_a_beir_folder_given_as_corpus_keeps_title_only_documents_as_load_beir_does(tmp_path, caplog):
    (tmp_path / "corpus.jsonl").write_text(
        '{"_id": "d1", "title": "T", "text": "one"}\n{"_id": "d2", "title": "Only a title", "text": ""}\n'
        '{"_id": "d3", "title": "", "text": " "}\n')
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "a?"}\n')
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("q1\td2\t1\n")
    caplog.set_level("WARNING")
    docs = load_corpus(tmp_path)
    assert [(d.id, d.text) for d in docs] == [(d.id, d.text) for d in load_beir(tmp_path)[0]]
    assert [(d.id, d.text) for d in docs] == [("d1", "one"), ("d2", "Only a title")]
    assert "1 document(s) with neither text nor title left out (first: 'd3')" in caplog.text  # never in silence


def test_unknown_corpus_keys_are_named_once_and_never_overwrite_metadata(tmp_path, caplog):
    p = _write(tmp_path / "c.jsonl", [
        '{"id": "m3", "text": "t", "metadata": {"src": "mine"}, "src": "extra"}',
        '{"id": "m4", "tittle": "Typo", "text": "u"}',
        '{"id": "m5", "tittle": "Again", "text": "v"}',
        '{"id": "m6", "metadata": [1], "x": 1, "text": "w"}',
        '{"id": "m7", "metadata": "a string", "text": "w"}',
        '{"id": "m8", "metadata": null, "text": "w"}'])  # an export's null: no metadata, not a lost document
    caplog.set_level("WARNING")
    errors: list[InputError] = []
    docs = load_documents_jsonl(p, errors=errors)
    assert docs[0].metadata == {"src": "mine"}  # the top-level key does not overwrite metadata's own
    assert docs[1].metadata == {"tittle": "Typo"} and (docs[-1].id, docs[-1].metadata) == ("m8", {})
    assert [str(e) for e in errors] == [f"{p}:4: field 'metadata': must be a JSON object, got an array",
                                        f"{p}:5: field 'metadata': must be a JSON object, got a string"]
    warnings = [r.getMessage() for r in caplog.records if "unknown field" in r.getMessage()]
    assert len(warnings) == 1, warnings  # once per file, naming every unknown key of the lines read
    assert warnings[0] == (f"warning: {p}: unknown field(s) 'src', 'tittle' (did you mean 'title'?) on 3 line(s) "
                           "(a document has id, text, title, metadata): kept in each document's metadata (where "
                           "metadata has the key too, its own value: src)")


def test_documents_with_nothing_visible_are_skipped_by_both_loaders(tmp_path):
    p = _write(tmp_path / "c.jsonl", [json.dumps({"id": f"z{i}", "text": t})
                                      for i, t in enumerate(["\u200b", "\u0000", "\ufeff", "\u3000", "---", "real"])])
    errors: list[InputError] = []
    assert [d.id for d in load_documents_jsonl(p, errors=errors)] == ["z5"]
    assert len(errors) == 5 and all("field 'text': empty text" in str(e) for e in errors)
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "zw.md").write_text("\u200b\u200b\n")
    (folder / "nul.txt").write_text("\u0000")
    (folder / "ok.md").write_text("Words.")
    errors = []
    assert [d.id for d in load_documents_folder(folder, errors)] == ["ok.md"]
    assert sorted(e.path.rsplit("/", 1)[1] for e in errors) == ["nul.txt", "zw.md"]


@pytest.mark.parametrize("text, title", [
    ("---\ntitle: x\nlayout: post\n---\n\n# Real title\n\nBody.", "Real title"),
    ("```python\n# a comment, not a heading\nx = 1\n```\n\n## Usage\n", "Usage"),
    ("#1 rule\n\nNo heading here.", "notes"),
    ("Plain first line\n# Heading later ##\n", "Heading later"),
    ("No heading at all.\n", "notes"),
    ("# Title one\n\nBody.", "Title one"),
])
def test_a_markdown_title_is_its_first_heading_else_its_file_name(tmp_path, text, title):
    (tmp_path / "notes.md").write_text(text, encoding="utf-8")
    assert load_documents_folder(tmp_path)[0].title == title


def test_a_text_file_title_is_its_first_line_and_a_hash_is_kept_when_no_heading(tmp_path):
    (tmp_path / "a.txt").write_text("#1 rule: never skip\nbody")
    (tmp_path / "b.txt").write_text("# Heading\nbody")
    assert [d.title for d in load_documents_folder(tmp_path)] == ["#1 rule: never skip", "Heading"]


def test_a_folder_corpus_follows_links_once_and_says_what_it_leaves_out(tmp_path, caplog, monkeypatch):
    import os

    corpus, outside = tmp_path / "corpus", tmp_path / "outside"
    (corpus / "sub").mkdir(parents=True)
    outside.mkdir()
    (corpus / "top.md").write_text("# Top\ntop doc")
    (corpus / "sub" / "inner.md").write_text("inner doc")
    (outside / "e.md").write_text("external doc")
    (corpus / "alias.md").symlink_to("top.md")  # the same file twice: indexed once, under its own name
    (corpus / "broken.md").symlink_to(tmp_path / "nonexistent")
    (corpus / "linked").symlink_to(outside)  # a folder outside: followed (Python 3.11's rglob does not)
    (corpus / "again").symlink_to(corpus / "sub")  # a folder inside (sorts before sub): its files once
    (corpus / "sub" / "loop").symlink_to(corpus)  # a loop: never followed twice
    (corpus / "locked").mkdir()
    (corpus / "locked" / "x.md").write_text("locked away")
    (corpus / ".git").mkdir()
    (corpus / ".git" / "HEAD.txt").write_text("ref: refs/heads/main")
    (corpus / ".venv" / "lib").mkdir(parents=True)
    (corpus / ".venv" / "lib" / "LICENSE.txt").write_text("MIT")
    (corpus / ".dotfile.txt").write_text("hidden notes")
    real_scandir = os.scandir

    def scandir(path):  # a folder this user cannot read (as root, chmod 000 would not stop us)
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    caplog.set_level("WARNING")
    errors: list[InputError] = []
    docs = load_documents_folder(corpus, errors)
    assert [d.id for d in docs] == ["linked/e.md", "sub/inner.md", "top.md"]
    said = sorted(str(e).removeprefix(str(corpus) + "/") for e in errors)
    assert len(said) == 5, said
    assert said[0].startswith("again: a link to a folder already read")
    assert said[1].startswith("alias.md: the same file as ") and said[1].endswith("top.md (a link): indexed once, "
                                                                                 "under that name")
    assert said[2] == f"broken.md: broken link (to {tmp_path / 'nonexistent'}): left out"
    assert said[3] == "locked: unreadable folder (Permission denied): its files are left out"
    assert said[4].startswith("sub/loop: a link to a folder already read")
    assert f"{corpus}: 3 hidden path(s) skipped (.dotfile.txt, .git/, .venv/)" in caplog.text


def test_a_qrels_pair_judged_twice_keeps_the_last_grade_and_is_said_once(tmp_path, caplog):
    """Audit of the retrieval metrics: a second row for one (query-id, corpus-id) overwrote the first in silence. The
    last row still wins (BEIR's loader and ir_datasets' qrels_dict read it so: the numbers stay theirs), and one
    warning per file names the first repeat's line, how many rows repeat a pair and the pairs graded differently."""
    from corpora.loaders import load_qrels

    path = tmp_path / "q.tsv"
    path.write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t1\nq1\td2\t1\nq2\td3\t1\nq1\td1\t0\n"
                    "q2\td3\t2\nq1\td1\t1\n")
    caplog.set_level("WARNING")
    assert load_qrels(path) == {"q1": {"d1": 1, "d2": 1}, "q2": {"d3": 2}}
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "\n" not in lines[0]
    assert lines[0] == (
        f"warning: {path}:4: field 'corpus-id': 4 qrels row(s) judge a query-id and corpus-id pair that an earlier "
        "row judged (first: query-id 'q1' corpus-id 'd2', first judged on line 3); 2 pair(s) given conflicting grades "
        "(first: query-id 'q1' corpus-id 'd1': 2 on line 2, 0 on line 6, 1 on line 8): the last row's grade is used "
        "for each pair, as BEIR's loader reads it")
    # the same grade again: said, and said to agree; a bad row is no first judgement
    caplog.clear()
    path.write_text("q1\td1\t1\nq1\td1\t1\nq2\td2\tx\nq2\td2\t1\n")
    errors: list[InputError] = []
    assert load_qrels(path, errors) == {"q1": {"d1": 1}, "q2": {"d2": 1}} and len(errors) == 1
    assert [r.getMessage() for r in caplog.records] == [
        f"warning: {path}:2: field 'corpus-id': 1 qrels row(s) judge a query-id and corpus-id pair that an earlier "
        "row judged (first: query-id 'q1' corpus-id 'd1', first judged on line 1); each repeat gives the same grade: "
        "the last row's grade is used for each pair, as BEIR's loader reads it"]
    caplog.clear()
    path.write_text("q1\td1\t1\nq1\td2\t1\nq2\td1\t0\n")  # no repeat: no warning
    load_qrels(path)
    assert not caplog.records


def test_a_repeated_qrels_pair_through_a_beir_folder_reaches_the_question_graded_as_its_last_row(tmp_path, caplog):
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "text": "one"}\n{"_id": "d2", "text": "two"}\n')
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "a?"}\n')
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t1\nq1\td1\t0\n")
    caplog.set_level("WARNING")
    _, (q,) = load_beir(tmp_path, "test")
    assert q.metadata["qrels"] == {"d1": 0, "d2": 1} and q.relevant_doc_ids == ["d2"]
    assert "test.tsv:4: field 'corpus-id': 1 qrels row(s)" in caplog.text
    assert "(first: query-id 'q1' corpus-id 'd1': 1 on line 2, 0 on line 4)" in caplog.text
