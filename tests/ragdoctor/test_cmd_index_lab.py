import json

from ragdoctor.cli import main


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
