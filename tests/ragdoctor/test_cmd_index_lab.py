import json

from ragdoctor.cli import main
from tests.files import symlink_loop


def test_index_lab_on_the_bundled_corpus(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["index-lab", "--out", "lab.json", "--embedder", "fake", "--index-dir", "idx"]) == 0
    lab = json.loads((tmp_path / "lab.json").read_text())
    rows = {r["name"]: r for r in lab["rows"]}
    assert lab["queries_from"] == "bundled questions" and lab["n_labelled_queries"] > 50
    assert {"flat", "sq8", "ivfpq", "ivfpq+refine sq8", "ivfpq+refine flat", "hnsw"} <= set(rows)
    assert rows["flat"]["recall@10_vs_flat"] == 1.0 and 0 <= rows["flat"]["ndcg@10"] <= 1
    assert lab["vectors_from"] == "the index folder's flat index"
    assert "wrote lab.json" in capsys.readouterr().out
    # an existing index folder without questions: a seeded sample of its own vectors, nDCG unmeasured; the lab's own
    # JSON from the first run is replaced (a file it did not write would be refused: tests/test_bad_inputs.py)
    assert main(["index-lab", "--out", "lab.json", "--embedder", "fake", "--index", "idx"]) == 0
    lab2 = json.loads((tmp_path / "lab.json").read_text())
    assert lab2["ndcg_unmeasured"] and all(r["ndcg@10"] is None for r in lab2["rows"])


def _small(tmp_path):
    docs = [("d1", "Paris is the capital of France."), ("d2", "The sky is blue because of Rayleigh scattering."),
            ("d3", "Hamlet was written by William Shakespeare.")]
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in docs))
    qs = [("q1", "What is the capital of France?", "d1"), ("q2", "Who wrote Hamlet?", "d3")]
    (tmp_path / "qs.jsonl").write_text("".join(json.dumps({"id": i, "question": q, "relevant_doc_ids": [d]}) + "\n"
                                               for i, q, d in qs))
    return ["--corpus", "corpus.jsonl", "--questions", "qs.jsonl", "--embedder", "fake", "--index-dir", "idx"]


def full_disk(monkeypatch):
    """Every report write fails as on a full disk (write() errors carry no file name)."""
    import io

    import corpora.paths

    class Full(io.StringIO):
        def write(self, text):
            raise OSError(28, "No space left on device")
    monkeypatch.setattr(corpora.paths, "open", lambda *a, **k: Full(), raising=False)


def test_a_failed_write_keeps_the_printed_table_and_names_the_file(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = _small(tmp_path)
    full_disk(monkeypatch)
    assert main(["index-lab", "--out", "lab.json", *argv]) == 2
    out, err = capsys.readouterr()
    assert "flat" in out and "hnsw" in out and "wrote" not in out  # the measurements are shown, not lost
    errors = [ln for ln in err.splitlines() if ln.startswith("ragdoctor: error")]
    assert errors == ["ragdoctor: error: lab.json: No space left on device"], err


def test_a_symbolic_link_loop_as_out_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    import eval.index_lab

    monkeypatch.chdir(tmp_path)
    symlink_loop(tmp_path)
    monkeypatch.setattr(eval.index_lab, "run_lab", lambda *a, **k: (_ for _ in ()).throw(AssertionError("ran")))
    assert main(["index-lab", "--out", "loop1", *_small(tmp_path)]) == 2
    assert main(["index-lab", "--out", "lab.json", *_small(tmp_path)[:-1], "loop1"]) == 2  # --index-dir a loop
    err = capsys.readouterr().err
    assert err.count("ragdoctor: error: loop1: is a symbolic link loop") == 2 and "internal error" not in err, err
    assert not (tmp_path / "idx").exists()


def _repeated_question(tmp_path) -> list[str]:
    """The small corpus with a question set asking one text under two ids (white space and case aside) and a third,
    each labelled."""
    argv = _small(tmp_path)
    qs = [("q1", "What is the capital of France?", "d1"), ("q2", "  what is the capital of  FRANCE? ", "d1"),
          ("q3", "Who wrote Hamlet?", "d3")]
    (tmp_path / "qs.jsonl").write_text("".join(json.dumps({"id": i, "question": q, "relevant_doc_ids": [d]}) + "\n"
                                               for i, q, d in qs))
    return argv


def test_index_lab_warns_once_about_a_question_asked_under_two_ids(tmp_path, capsys, monkeypatch):
    """`ragdoctor run` warns about it (rag.session.warn_repeated_texts); the lab reads the same question set and
    weighs the text twice in its nDCG: the same warning, once, and the lab still measures both ids."""
    monkeypatch.chdir(tmp_path)
    assert main(["index-lab", "--out", "lab.json", *_repeated_question(tmp_path)]) == 0
    err = capsys.readouterr().err
    warned = [ln for ln in err.splitlines() if "ask again what another id asks" in ln]
    assert len(warned) == 1 and warned[0].startswith("ragdoctor: warning: qs.jsonl: 1 question(s)"), err
    assert "'q2' repeats 'q1'" in warned[0]
    assert json.loads((tmp_path / "lab.json").read_text())["n_labelled_queries"] == 3
