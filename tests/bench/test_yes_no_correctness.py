"""bench/yes_no_correctness.py runs end to end with the lexical judge and writes its counts."""
import json

from bench.yes_no_correctness import CASES, main


def test_the_yes_no_bench_counts_right_and_wrong_answers(tmp_path, capsys):
    out = tmp_path / "yn.json"
    assert main(["--judges", "lexical", "--out", str(out)]) == 0
    row = json.loads(out.read_text())["judges"]["lexical"]
    assert row["pairs"] == len(CASES) == 20 and row["unmeasured"] == 0
    assert 0 <= row["wrong_called_right"] <= 2 and row["right_called_wrong"] >= 10  # word overlap misses paraphrases
    assert "wrong answers called right" in capsys.readouterr().out
