"""bench/ppi_demo.py on a small run of the bundled questions (lexical judge, no model): labels come from the planted
ground truth by rule, marked as such, in the Label page's order; the summary then has PPI-corrected groundedness and
correctness with CIs, and a rerun replaces the script's own labels without touching a person's."""
from pathlib import Path

from corpora.bundled import bundled_documents, bundled_questions
from corpora.labels import add_label, read_labels
from corpora.records import Chunk, Trace
from eval.judges.lexical import LexicalScorer
from eval.judges.scorer import ScorerJudge
from eval.judging import evaluate
from tests.bench import load_bench


def bench():
    mod = load_bench("ppi_demo")
    return mod


def bundled_run(path: Path) -> Path:
    """Every bundled question answered from its relevant documents: every third answer with a wrong number."""
    docs = {d.id: d for d in bundled_documents()}
    traces = []
    for i, q in enumerate(bundled_questions()):
        ctx = [Chunk(chunk_id=f"{d}#0", doc_id=d, rank=r, text=docs[d].text)
               for r, d in enumerate(q.relevant_doc_ids or [next(iter(docs))], 1)]
        answer = q.reference or "I don't know based on the provided documents."
        if i % 3 == 0:
            answer = f"It is 987654 in every case ({answer.split()[0]})."
        traces.append(Trace.of(q, contexts=ctx, answer=answer))
    evaluate(traces, metrics=["groundedness", "answer_correctness"], judges=[ScorerJudge(LexicalScorer())], run=path,
             progress=False)
    return path


def test_ppi_demo_writes_planted_labels_and_reports_corrected_means(tmp_path, capsys):
    run = bundled_run(tmp_path / "demo")
    add_label(run, "qa01", "groundedness", 1, "a person")
    mod = bench()
    out = tmp_path / "ppi.json"
    assert mod.main([str(run), "--n", "32", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "who=planted-ground-truth" in text and "Calibrated by human labels" in text
    labels = read_labels(run)
    mine = [lb for lb in labels if lb.who == mod.WHO]
    assert {m: sum(lb.metric == m for lb in mine) for m in mod.METRICS} == {"groundedness": 32,
                                                                             "answer_correctness": 32}
    assert all("not a person" in lb.note for lb in mine)
    wrong = {lb.sample_id for lb in mine if lb.metric == "answer_correctness" and lb.value == 0}
    assert wrong  # the planted wrong numbers are found
    import json

    rows = {r["metric"]: r for r in json.loads(out.read_text())["rows"]}
    for m in mod.METRICS:
        assert rows[m]["status"] == "ok" and rows[m]["ci_low"] <= rows[m]["mean"] <= rows[m]["ci_high"]
    add_label(run, "qa01", "groundedness", 0, "a person")  # a person changed their mind: the log keeps both
    log = run / "labels.jsonl"
    log.write_text(log.read_text() + '{"sample_id": "qa02", "value": "yes", "who": "bob"}\n')  # a hand-edited bad line
    theirs = [line for line in log.read_text().splitlines() if mod.WHO not in line]
    assert mod.main([str(run), "--n", "32"]) == 0  # a rerun replaces its own labels, keeps every other line
    again = read_labels(run)
    assert len([lb for lb in again if lb.who == mod.WHO]) == 64 and any(lb.who == "a person" for lb in again)
    assert [line for line in log.read_text().splitlines() if mod.WHO not in line] == theirs
