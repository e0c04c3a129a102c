"""bench/context_budget.py plumbing with the fake embedder, the fake generator and the lexical judge: every setting
answers every question, the budgets bound what the prompt holds, and the JSON has the trade-off columns."""
import json

from tests.bench import load_bench


def test_context_budget_bench_runs_and_writes_json(tmp_path, capsys):
    bench = load_bench("context_budget")
    out = tmp_path / "cb.json"
    assert bench.main(["--llm", "fake", "--embedder", "fake", "--judges", "lexical,labels", "--limit", "6",
                       "--budgets", "top-k,64,400", "--out", str(out)]) == 0
    body = json.loads(out.read_text())
    rows = {r["setting"]: r for r in body["rows"]}
    assert list(rows) == ["top-k", "64 tokens", "400 tokens"] and body["questions"] == 6
    assert all(r["questions"] == 6 and r["errors"] == 0 for r in rows.values())
    assert rows["top-k"]["chunks_mean"] == 4.0 and rows["top-k"]["budget_tokens_mean"] is None
    assert rows["64 tokens"]["budget_tokens_mean"] <= 64 < rows["400 tokens"]["budget_tokens_mean"] <= 400
    assert rows["64 tokens"]["prompt_tokens_mean"] < rows["400 tokens"]["prompt_tokens_mean"]
    assert rows["64 tokens"]["recall@5"] == rows["400 tokens"]["recall@5"]  # the same retriever ranks for both
    assert rows["64 tokens"]["docs_in_prompt"] <= rows["400 tokens"]["docs_in_prompt"]
    for r in rows.values():
        assert set(r["metrics"]) == {"context_recall", "context_precision", "groundedness", "answer_correctness"}
        assert r["metrics"]["groundedness"]["judge"] == "lexical"
    assert "400 tokens" in capsys.readouterr().out
