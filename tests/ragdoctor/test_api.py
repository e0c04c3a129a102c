"""The Python API (ragdoctor/api.py): the README's examples run as written, `import ragdoctor` stays light, and
`evaluate` takes every input the README names."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import ragdoctor
from corpora.errors import InputError, UsageError
from corpora.run_folder import RunFolder
from eval.judges.lexical import LexicalScorer
from eval.judges.scorer import ScorerJudge

ROOT = Path(__file__).resolve().parents[2]
ROW = {"id": "kv", "question": "What does the KV cache store?",
       "contexts": [{"id": "kv#0", "doc_id": "kv", "text": "The KV cache stores keys and values for every token."}],
       "answer": "The KV cache stores keys and values for every token.", "reference": "Keys and values.",
       "relevant_ids": ["kv"]}


def readme_examples() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Python API", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_readme_examples_run_as_written(tmp_path, monkeypatch, capsys):
    examples = readme_examples()
    assert len(examples) == 2
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGDOCTOR_EMBEDDING__MODEL", "fake")  # the second example indexes: a fast embedder for it
    for code in examples:
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})  # noqa: S102 - the README's own code
    out = capsys.readouterr().out
    assert "gate failed:" in out and "grounded" in out and "chunks" in out
    assert len(RunFolder(tmp_path / "runs" / "api-demo").judgements()) == 5


def test_import_ragdoctor_is_light():
    code = ("import sys, ragdoctor; heavy = [m for m in ('torch', 'sentence_transformers', 'llama_index.core', "
            "'pandas', 'ragas') if m in sys.modules]; print(heavy); assert not heavy")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_evaluate_takes_a_dataframe_objects_and_built_judges(tmp_path):
    frame = pd.DataFrame([ROW, {**ROW, "id": "no-ref", "reference": None}])  # a missing cell is NaN in the frame
    result = ragdoctor.evaluate(frame, judges=[ScorerJudge(LexicalScorer(), config_id="lexical:v1")],
                                metrics="groundedness,answer_correctness", out=tmp_path / "run")
    table = result.to_pandas()
    assert list(table["sample_id"]) == ["kv", "no-ref"] and table["groundedness"].tolist() == [1.0, 1.0]
    long = result.to_pandas(long=True)
    assert set(long.loc[long["sample_id"] == "no-ref", "status"]) == {"ok", "not_applicable"}
    again = ragdoctor.evaluate(frame, judges=[ScorerJudge(LexicalScorer(), config_id="lexical:v1")],
                               metrics="groundedness,answer_correctness", out=tmp_path / "run")
    assert again.summary().equals(result.summary())  # resumed from the same folder: nothing judged twice
    s = result.summary().set_index("metric")
    assert s.loc["groundedness", "mean"] == 1.0 and {"ci_low", "ci_high"} <= set(s.columns)


def test_evaluate_refuses_a_named_nli_model_that_is_no_model_before_writing(tmp_path):
    (tmp_path / "mine").mkdir()
    with pytest.raises(UsageError, match="nli-model .*mine: not a judge folder"):
        ragdoctor.evaluate([ROW], judges="nli,lexical", nli_model=str(tmp_path / "mine"), out=tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_a_home_relative_out_is_the_home_folders(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    ragdoctor.evaluate([ROW], judges="lexical", out="~/runs/x")  # one folder, as a shell would have expanded it
    assert {"results.jsonl", "results.parquet", "summary.json"} <= {p.name for p in (tmp_path / "home/runs/x").iterdir()}
    assert not (tmp_path / "~").exists()


class Node:
    def __init__(self, node_id: str, text: str, doc: str):
        self.node_id, self.text, self.ref_doc_id, self.metadata = node_id, text, doc, {}

    def get_content(self) -> str:
        return self.text


class Hit:
    def __init__(self, node: Node, score: float):
        self.node, self.score = node, score


class Response:  # the shape of a llama-index Response: its text and the source nodes it was answered from
    def __init__(self, text: str, nodes: list[Hit]):
        self.response, self.source_nodes = text, nodes


def test_evaluate_takes_llama_index_responses_and_reports_bad_rows(tmp_path):
    resp = Response("The KV cache stores keys and values for every token.",
                    [Hit(Node("kv#0", "The KV cache stores keys and values for every token.", "kv"), 0.9)])
    result = ragdoctor.evaluate([("What does the KV cache store?", resp), {"question": ""}], judges="lexical,labels",
                                metrics="groundedness,recall@5", out=tmp_path / "run")
    trace = result.judgements[0].trace
    assert trace.chunks[0].doc_id == "kv" and trace.chunks[0].score == 0.9
    assert result.judgements[0].get("groundedness").value == 1.0
    assert result.input_errors == ["rows:2: field 'question': is blank"]
    with pytest.raises(InputError, match="no valid records"):
        ragdoctor.evaluate([{"question": ""}], judges="lexical", out=tmp_path / "bad")


def test_evaluate_never_scores_llama_index_placeholder_answer(tmp_path):
    hit = Hit(Node("kv#0", "The KV cache stores keys and values for every token.", "kv"), 0.9)
    rows = [("What does the KV cache store?", Response("Empty Response", [])),
            ("What does the KV cache hold?", Response("Empty Response", [hit])),
            ("What is in the KV cache?", Response("Keys and values for every token.", [hit]))]
    result = ragdoctor.evaluate(rows, judges="lexical", metrics="groundedness,answer_relevance", out=tmp_path / "run")
    nothing, mute, fine = result.judgements
    for j, why in ((nothing, "no node was retrieved"), (mute, "the LLM returned no text")):
        assert j.trace.outcome == "error" and j.trace.answer == "" and why in j.trace.metadata["error"]
        assert {r.status for r in j.results} == {"unmeasured"}  # never a 0 for an answer the engine did not give
    assert fine.get("groundedness").status == "ok"


def test_gate_refuses_a_minimum_on_a_lower_is_better_metric(tmp_path):
    result = ragdoctor.evaluate([ROW], judges="lexical", metrics="groundedness", out=tmp_path / "run")
    assert result.gate({"groundedness": 0.5}).passed and result.gate({"groundedness:lexical": 1.0}, ci_lower=True)
    with pytest.raises(InputError, match="lower is better"):
        result.gate({"noise_sensitivity": 0.5})
