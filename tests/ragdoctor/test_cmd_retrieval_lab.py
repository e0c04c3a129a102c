import json

import pytest

from ragdoctor.cli import main


def test_retrieval_lab_on_the_bundled_corpus(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["retrieval-lab", "--out", "lab.json", "--embedder", "fake", "--index-dir", "idx", "--no-rerank",
                 "--bm25", "1.5:0.75"]) == 0
    lab = json.loads((tmp_path / "lab.json").read_text())
    names = {r["name"] for r in lab["rows"]}
    assert lab["current"] == "hybrid zscore w=0.5" and "hybrid rrf" in names and "bm25, bm25 k1=1.5 b=0.75" in names
    assert lab["index_bm25"] == {"k1": 0.9, "b": 0.4}  # the index's own setting: the rows without "k1"
    assert not any("+rerank" in n or "k1=1.2" in n for n in names)
    assert lab["queries_from"] == "bundled questions" and lab["n_choose"] + lab["n_confirm"] == lab["n_queries"] > 50
    assert lab["chosen"] in names and lab["confirm"]["verdict"] in ("beats", "ties", "loses")
    assert all(0 <= r["ndcg@10"] <= 1 for r in lab["rows"])
    out = capsys.readouterr().out
    assert "chosen on" in out and "confirmed on the other" in out and "wrote lab.json" in out
    from ragdoctor.cmd_retrieval_lab import LAB_SIGNATURE  # a rerun may replace the lab's own JSON
    assert LAB_SIGNATURE in (tmp_path / "lab.json").read_text()[:4096]


@pytest.mark.model
def test_retrieval_lab_with_the_rerank_stage(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["retrieval-lab", "--out", "lab.json", "--embedder", "fake", "--index-dir", "idx", "--bm25", "",
                 "--max-queries", "12"]) == 0
    lab = json.loads((tmp_path / "lab.json").read_text())
    reranked = [r for r in lab["rows"] if r["rerank_weight"] is not None]
    assert {r["rerank_weight"] for r in reranked} == {0.25, 0.5} and len(reranked) == 14  # 7 hybrids x 2 shares
    assert lab["rerank_ms_p50"] > 0 and lab["reranker"] == "rerank-minilm" and lab["n_queries"] == 12


def test_retrieval_lab_refuses_bad_input_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["retrieval-lab", "--out", "lab.json", "--embedder", "fake", "--bm25", "0.9"]) == 2
    assert "--bm25: '0.9' is not K1:B" in capsys.readouterr().err
    (tmp_path / "docs.jsonl").write_text(json.dumps({"id": "d1", "text": "Paris is the capital of France."}) + "\n")
    assert main(["retrieval-lab", "--out", "lab.json", "--embedder", "fake", "--corpus", "docs.jsonl",
                 "--index-dir", "idx"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "has no labelled queries" in err and "qrels/train.tsv" in err
    assert not (tmp_path / "lab.json").exists()
    with pytest.raises(SystemExit) as stop:  # argparse's own usage error: exit 2 with the option named
        main(["retrieval-lab", "--out", "lab.json", "--embedder", "fake", "--max-queries", "-3"])
    assert stop.value.code == 2 and "--max-queries: must be an integer >= 1" in capsys.readouterr().err


def test_a_bm25_setting_given_twice_is_measured_once():
    from ragdoctor.cmd_retrieval_lab import _bm25_grid
    assert _bm25_grid("1.2:0.75,1.2:0.75,0.9:0.4") == [(1.2, 0.75), (0.9, 0.4)]
    assert _bm25_grid(None) == [(1.2, 0.75), (1.5, 0.75), (0.9, 0.4)]  # the previous default is among them


def test_a_failed_write_keeps_the_printed_table_and_a_loop_is_refused_first(tmp_path, capsys, monkeypatch):
    from tests.files import symlink_loop
    from tests.ragdoctor.test_cmd_index_lab import _small, full_disk

    monkeypatch.chdir(tmp_path)
    argv = [*_small(tmp_path), "--no-rerank", "--bm25", ""]
    symlink_loop(tmp_path)
    assert main(["retrieval-lab", "--out", "loop1", *argv]) == 2
    assert "loop1: is a symbolic link loop" in capsys.readouterr().err and not (tmp_path / "idx").exists()
    full_disk(monkeypatch)
    assert main(["retrieval-lab", "--out", "lab.json", *argv]) == 2
    out, err = capsys.readouterr()
    assert "chosen on" in out and "wrote" not in out  # the table and the verdict are shown, not lost
    errors = [ln for ln in err.splitlines() if ln.startswith("ragdoctor: error")]
    assert errors == ["ragdoctor: error: lab.json: No space left on device"], err


def test_retrieval_lab_warns_once_about_a_question_asked_under_two_ids(tmp_path, capsys, monkeypatch):
    """The warning `ragdoctor run` gives for one text under two ids, from the same code path, once per run."""
    from tests.ragdoctor.test_cmd_index_lab import _repeated_question
    monkeypatch.chdir(tmp_path)
    assert main(["retrieval-lab", "--out", "lab.json", *_repeated_question(tmp_path), "--no-rerank", "--bm25", ""]) == 0
    err = capsys.readouterr().err
    warned = [ln for ln in err.splitlines() if "ask again what another id asks" in ln]
    assert len(warned) == 1 and warned[0].startswith("ragdoctor: warning: qs.jsonl: 1 question(s)"), err
    assert "'q2' repeats 'q1'" in warned[0]
    assert json.loads((tmp_path / "lab.json").read_text())["n_queries"] == 3
