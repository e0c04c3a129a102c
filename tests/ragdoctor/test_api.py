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
    with pytest.raises(UsageError, match="^nli_model .*mine: not a judge folder"):
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
    assert result.gate({"groundedness": 0.5}).passed and result.gate({"groundedness:lexical": 0.2}, ci_lower=True)
    assert not result.gate({"groundedness:lexical": 1.0}, ci_lower=True)  # one sample: its CI is no certainty
    with pytest.raises(InputError, match="lower is better"):
        result.gate({"noise_sensitivity": 0.5})


def test_a_llama_index_response_that_retrieved_nothing_is_an_ungrounded_answer(tmp_path):
    rows = [("What is the capital?", Response("Paris is the capital.", [])),
            {"question": "Q?", "response": Response("Paris.", []), "answer": "Lyon."}]
    result = ragdoctor.evaluate(rows, judges="lexical", metrics="groundedness", out=tmp_path / "run")
    (j,) = result.judgements
    assert j.trace.contexts == [] and j.get("groundedness").status == "ok" and j.get("groundedness").value == 0.0
    assert result.input_errors == ["rows:2: field 'answer': given beside a llama-index Response in 'response', whose "
                                   "text is the answer: give one of them"]


def test_a_whole_float_id_is_the_integer_pandas_made_it_from(tmp_path):
    frame = pd.DataFrame([{**ROW, "id": 1}, {**ROW, "id": None}])  # a missing cell turns the column to floats
    result = ragdoctor.evaluate(frame, judges="lexical", metrics="groundedness", out=tmp_path / "run")
    assert [j.sample_id for j in result.judgements] == ["1", "line2"] and not result.input_errors


def test_gate_thresholds_and_flags_are_checked(tmp_path):
    import numpy as np

    result = ragdoctor.evaluate([ROW], judges="lexical", metrics="groundedness", out=tmp_path / "run")
    assert result.gate({"groundedness": np.float32(0.5)}).passed and result.gate({"groundedness": np.int64(1)})
    for kwargs, message in [({}, "no thresholds"), ({"thresholds": {}}, "no thresholds"),
                            ({"thresholds": {"groundedness": 0.1}, "ppi_fallback": True}, "ppi_fallback: needs ppi"),
                            ({"thresholds": {"groundedness": 0.5, " groundedness": 0.9}}, "'groundedness' is given twice"),
                            ({"thresholds": {"groundedness": 0.5}, "ci_lower": "no"}, "ci_lower: must be True or False"),
                            ({"thresholds": [("groundedness", 0.5)]}, "thresholds: expected a mapping"),
                            ({"thresholds": {5: 0.5}}, "the key 5 is not a metric name")]:
        with pytest.raises(UsageError, match=message):
            result.gate(**kwargs)


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"data": None}, InputError, "field 'data': expected a JSONL path, a DataFrame or an iterable of records, got N"),
    ({"data": 5}, InputError, "got int"),
    ({"judges": 5}, UsageError, "judges: expected names"),
    ({"judges": [None]}, UsageError, "judges: expected names as a comma-separated string or a list of strings"),
    ({"judges": ["lexical", ScorerJudge(LexicalScorer(), config_id="lexical:v1")]}, UsageError, "not both"),
    ({"judges": [ScorerJudge(LexicalScorer(), config_id="lexical:v1")], "metrics": "recall@5"}, UsageError,
     "no judge given measures 'recall@5'"),
    ({"judges": [ScorerJudge(LexicalScorer(), config_id="lexical:v1")], "nli_model": "x"}, UsageError,
     "nli_model: the judges given are built objects"),
    ({"metrics": 7}, UsageError, "metrics: expected names"),
    ({"batch_size": 1.5}, UsageError, "batch_size: must be an integer >= 1, got 1.5"),
    ({"batch_size": "4"}, UsageError, "batch_size: must be an integer >= 1"),
    ({"judge_base_url": "http://127.0.0.1:9"}, UsageError, "judge_base_url: only the llm and ragas judges read it"),
    ({"judge_model": "qwen2.5-1.5b"}, UsageError, "judge_model: only the llm and ragas judges read it"),
    ({"nli_threshold": 0.7}, UsageError, "nli_threshold: only the nli judge reads it"),
    ({"judge_max_chars": 8000}, UsageError, "judge_max_chars: only the llm judge reads it, and the judges run are "
     "lexical"),
    ({"judge_max_chars": 8000, "judges": "ragas"}, UsageError, "judge_max_chars: only the llm judge reads it"),
    ({"judge_max_chars": 199, "judges": "llm"}, UsageError,
     "judge_max_chars: must be an integer >= 200 and <= 10000000, got 199"),
    ({"judge_max_chars": 10_000_001, "judges": "llm"}, UsageError, "judge_max_chars: must be an integer >= 200"),
    ({"judge_max_chars": 8000.0, "judges": "llm"}, UsageError, "judge_max_chars: must be an integer >= 200"),
    ({"judge_max_chars": "8000", "judges": "llm"}, UsageError, "judge_max_chars: must be an integer >= 200"),
    ({"judge_max_chars": True, "judges": "llm"}, UsageError, "judge_max_chars: must be an integer >= 200"),
    ({"judges": [ScorerJudge(LexicalScorer(), config_id="lexical:v1")], "judge_max_chars": 8000}, UsageError,
     "judge_max_chars: the judges given are built objects"),
    ({"nli_threshold": 1.0, "judges": "nli"}, UsageError, r"nli_threshold: must be a number > 0 and < 1, got 1\.0"),
    ({"nli_threshold": float("nan"), "judges": "nli"}, UsageError, "nli_threshold: must be a number > 0 and < 1"),
    ({"limit": 0}, UsageError, "limit: must be an integer >= 1, got 0"),
    ({"progress": "yes"}, UsageError, "progress: must be True or False, got 'yes'"),
    ({"metrics": "recall@05"}, UsageError, "unknown metric 'recall@05'"),
    # the validators the CLI shares name the API's argument here, not the CLI's flag
    ({"judges": "nope"}, UsageError, "^judges: unknown judge 'nope'"),
    ({"judges": " , "}, UsageError, "^judges: no names given"),
    ({"metrics": "nope"}, UsageError, "^metrics: unknown metric 'nope'"),
    ({"judges": [ScorerJudge(LexicalScorer(), config_id="lexical:v1")], "metrics": "nope"}, UsageError,
     "^metrics: unknown metric 'nope'"),
    ({"judges": "nli", "nli_model": "/nonexistent/x"}, UsageError, "^nli_model /nonexistent/x: folder not found"),
    # an option no judge run reads is said first, before its value is looked at (the folder here is missing)
    ({"judges": "lexical", "nli_model": "/nonexistent/x"}, UsageError, "^nli_model: only the nli judge reads it"),
    # blank paths and names, never read as the current folder or the default (as the CLI refuses --out "")
    ({"out": ""}, UsageError, "^out: a blank value$"),
    ({"out": "   "}, UsageError, "^out: a blank value$"),
    ({"data": ""}, UsageError, "^data: a blank value$"),
    ({"data": " "}, UsageError, "^data: a blank value$"),
    ({"judges": "nli", "nli_model": ""}, UsageError, "^nli_model: a blank value$"),
    ({"judges": "llm", "judge_model": ""}, UsageError, "^judge_model: a blank value$"),
    ({"judges": "llm", "judge_model": "  "}, UsageError, "^judge_model: a blank value$"),
    ({"judges": "llm", "judge_base_url": ""}, UsageError, "^judge_base_url: a blank value$"),
    ({"judges": "ragas", "judge_base_url": ["http://127.0.0.1:9/v1", " "]}, UsageError, "^judge_base_url: a blank"),
    ({"judges": "llm", "judge_base_url": "127.0.0.1:8000"}, UsageError, "^judge_base_url: must be an http"),
    # wrong types: one line naming the argument, never a TypeError from inside
    ({"out": 5}, UsageError, "^out: expected a path .*got int"),
    ({"judges": "llm", "judge_model": 5}, UsageError, "^judge_model: expected a string, got int"),
    ({"judges": "llm", "judge_base_url": 5}, UsageError, "^judge_base_url: expected a URL or a list of URLs"),
    ({"judges": [ScorerJudge]}, UsageError, r"^judges: ScorerJudge is a class, not a built judge"),
    ({"data": "What does the KV cache store?"}, UsageError, "^data: 'What does the KV cache store\\?' is no file"),
])
def test_evaluate_refuses_what_it_would_misread_before_writing(tmp_path, kwargs, error, message):
    args = {"data": [ROW], "judges": "lexical", "out": tmp_path / "run", **kwargs}
    with pytest.raises(error, match=message) as err:
        ragdoctor.evaluate(args.pop("data"), **args)
    assert "\n" not in str(err.value) and not (tmp_path / "run").exists()
    assert "--" not in str(err.value)  # no CLI flag: the API's caller never typed one


def test_evaluate_passes_judge_max_chars_to_the_llm_judge(tmp_path, monkeypatch):
    """judge_max_chars is the CLI's --judge-max-chars: the llm judge quotes that many characters per ask (a passage
    the default 3,000 would cut is sent whole, no judge_cut) and its name says so."""
    from rag.fake_server import FakeOpenAIServer
    from rag.llm import FakeLLM

    monkeypatch.setenv("RAGDOCTOR_CACHE", str(tmp_path / "cache"))
    passage = "Filler text about the weather and cooking. " * 150 + "The Glimmer river flows through Zorbania."
    row = {"id": "z", "question": "Which river flows through Zorbania?", "answer": "The Glimmer.",
           "contexts": [{"id": "z#0", "text": passage}]}
    llm = FakeLLM({"Passage:": "YES"})
    with FakeOpenAIServer(llm) as srv:
        kw = {"judges": "llm", "metrics": "context_precision", "judge_base_url": srv.base_url}
        cut = ragdoctor.evaluate([row], out=tmp_path / "a", **kw)
        whole = ragdoctor.evaluate([row], out=tmp_path / "b", judge_max_chars=8000, **kw)
    [r_cut], [r_whole] = (res.judgements[0].results for res in (cut, whole))
    assert "judge_cut" in (r_cut.evidence or {}) and "judge_cut" not in (r_whole.evidence or {})
    assert passage in llm.calls[-1][-1]["content"] and r_whole.value == 1.0
    assert whole.summary_data["metrics"][0]["judge"] == "llm"
    assert RunFolder(tmp_path / "b").path.joinpath("config.json").read_text().count("@max_chars=8000") == 1


def test_pipeline_refuses_bad_config_questions_and_limits_in_one_line(tmp_path):
    from rag.llm import FakeLLM

    for config, message in [({"bogus": 1}, "config: field 'bogus': unknown field"),
                            ({"retrieval": {"top_k": 0}}, "config: field 'retrieval.top_k': Input should be greater"),
                            (5, "config: expected a PipelineConfig, a dict or a TOML path, got int")]:
        with pytest.raises(InputError, match=message):
            ragdoctor.Pipeline(config)
    pipe = ragdoctor.Pipeline({"embedding": {"model": "fake"}, "retrieval": {"rerank": False, "mode": "bm25"},
                               "index_dir": str(tmp_path / "idx")}, llm=FakeLLM())
    for call, message in [(lambda: pipe.run([{"id": "q1", "question": "What?"}], out=tmp_path / "a", limit=0),
                           "limit: must be an integer >= 1, got 0"),
                          (lambda: pipe.run([{"id": "q1"}], out=tmp_path / "a"),
                           "questions:1: field 'question': missing required field"),
                          (lambda: pipe.run([{"id": "q1", "question": "Q?"}, 5], out=tmp_path / "a"),
                           "questions:2: a value of type int is not a question"),
                          (lambda: pipe.ask(None), "ask: field 'question': Input should be a valid string"),
                          (lambda: pipe.ask("What?", relevant_doc_ids="doc1"), "field 'relevant_doc_ids'")]:
        with pytest.raises(InputError, match=message):
            call()
    assert not (tmp_path / "a").exists()
    result = pipe.run(["What does the KV cache store?"], out=tmp_path / "b")  # a plain string is a question
    assert [t.sample_id for t in result.traces] == ["q1"]
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("my notes")
    for call, message in [(lambda: pipe.run([], out=tmp_path / "c"), "questions: no questions given"),
                          (lambda: pipe.run([{"id": "x", "question": "A?"}, {"id": "y", "question": "B?"},
                                             {"id": "x", "question": "C?"}], out=tmp_path / "c"),
                           r"^questions:3: field 'id': the id 'x' is also question 1's"),
                          (lambda: pipe.run(["Q?"], out=tmp_path / "mine"), "is not a ragdoctor run folder")]:
        with pytest.raises(InputError, match=message):
            call()
    assert not (tmp_path / "c").exists() and sorted(p.name for p in (tmp_path / "mine").iterdir()) == ["notes.txt"]
    pipe.close()


def test_a_config_dict_overrides_the_environment_as_flags_do(monkeypatch):
    monkeypatch.setenv("RAGDOCTOR_RETRIEVAL__TOP_K", "7")
    assert ragdoctor.Pipeline({"chunking": {}}).config.retrieval.top_k == 7  # the environment fills what it leaves
    assert ragdoctor.Pipeline({"retrieval": {"top_k": 3}}).config.retrieval.top_k == 3
    monkeypatch.setenv("RAGDOCTOR_RETRIEVL__TOP_K", "7")  # a misspelt section is refused on every path
    with pytest.raises(InputError, match="RAGDOCTOR_RETRIEVL"):
        ragdoctor.Pipeline({"chunking": {}})


def test_evaluate_reports_skipped_rows_and_ambiguous_fields(tmp_path, caplog):
    rows = [{**ROW, "refrence": "Keys."}, {"id": "bad", "question": 5}, {**ROW, "id": "kv2"}]
    with caplog.at_level("WARNING", logger="ragdoctor.notices"):
        result = ragdoctor.evaluate(rows, judges="lexical", metrics="groundedness", limit=1, out=tmp_path / "run")
    said = [r.getMessage() for r in caplog.records]
    assert "skipped bad record: rows:2: field 'question': must be a string, got int" in said
    assert any("'refrence' is not one ragdoctor reads" in m for m in said)
    assert [j.sample_id for j in result.judgements] == ["kv"]  # limit: the first record


def test_to_pandas_keeps_a_column_for_a_metric_no_sample_measured(tmp_path):
    rows = [{"id": i, "question": "What does the KV cache store?", "answer": "Keys and values.", "reference": "Keys."}
            for i in ("a", "b")]  # no contexts: groundedness unmeasured for every sample
    table = ragdoctor.evaluate(rows, judges="lexical", out=tmp_path / "run").to_pandas()
    assert table["groundedness"].isna().all() and table["groundedness:lexical"].isna().all()
    assert table["answer_correctness"].notna().all()


def test_a_row_with_a_lone_surrogate_is_a_bad_row_not_a_crash(tmp_path):
    rows = [{**ROW, "id": "bad", "answer": "bad \udcff"}, ROW]
    result = ragdoctor.evaluate(rows, judges="lexical", metrics="groundedness", out=tmp_path / "run")
    assert [j.sample_id for j in result.judgements] == ["kv"]
    assert result.input_errors == ["rows:1: field 'answer': holds a lone surrogate ('\\udcff'): not valid Unicode text"]


def test_evaluate_says_so_when_nothing_was_measured(tmp_path, caplog):
    row = {"id": "a", "question": "q?", "answer": "The sky is blue.", "contexts": ["The sky is blue."],
           "reference": "The sky is blue."}  # no relevant ids: the labels judge has nothing to measure
    with caplog.at_level("WARNING", logger="ragdoctor.notices"):
        result = ragdoctor.evaluate([row], judges="labels", out=tmp_path / "run")
    why = "nothing was measured (every result was not applicable)"  # as `ragdoctor eval` says where it exits 2
    assert result.warnings == [why] and f"warning: {why}" in [r.getMessage() for r in caplog.records]
    assert len(result.judgements) == 1 and result.summary()["n"].sum() == 0  # still a result: not raised
    measured = ragdoctor.evaluate([row], judges="lexical", metrics="groundedness", out=tmp_path / "ok")
    assert measured.warnings == []


def test_summary_names_the_wilson_interval_it_uses_for_few_values(tmp_path):
    from eval.mathx import wilson_interval

    rows = [ROW, {**ROW, "id": "moon", "answer": "Optimizer momentum lives on the moon."}]
    result = ragdoctor.evaluate(rows, judges="lexical", metrics="groundedness", out=tmp_path / "run")
    values = result.to_pandas(long=True)["value"].astype(float)
    row = result.summary().iloc[0]
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(wilson_interval(float(values.sum()), 2))
    assert "Wilson" in (ragdoctor.EvalResult.summary.__doc__ or "")


def test_calibrated_has_the_status_and_reason_its_docstring_names(tmp_path):
    from corpora.labels import add_labels
    from corpora.records import Label

    result = ragdoctor.evaluate([ROW], judges="lexical", metrics="groundedness", out=tmp_path / "run")
    add_labels(result.run_dir, [Label(sample_id="kv", metric="groundedness", value=1.0, who="ann")])
    table = result.calibrated()
    assert {"status", "reason", "note"} <= set(table.columns)
    assert table["status"].tolist() == ["unmeasured"] and "need 30" in table["reason"].iloc[0]
    assert table["PPI mean"].isna().all()


def test_the_ppi_gate_names_the_ppi_fallback_argument(tmp_path):
    result = ragdoctor.evaluate([ROW], judges="lexical", metrics="groundedness", out=tmp_path / "run")
    verdict = result.gate({"groundedness": 0.5}, ppi=True)
    assert not verdict and "or pass ppi_fallback=True" in verdict.checks[0].message
    assert "--ppi-fallback" not in verdict.checks[0].message


def test_an_unavailable_judge_is_explained_with_the_apis_argument_names(tmp_path, monkeypatch, caplog):
    """Its reason reaches the user as a logged warning and as each result's reason: through the API it names the
    argument (nli_model), not the CLI's flag (--nli-model)."""
    monkeypatch.setattr("eval.judges.registry.default_nli_path", lambda: None)  # weights not installed
    with caplog.at_level("WARNING", logger="ragdoctor.notices"):
        result = ragdoctor.evaluate([ROW], judges="nli,lexical", metrics="groundedness", out=tmp_path / "run")
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "pass nli_model PATH" in said and "--nli-model" not in said
    reasons = {m.reason for j in result.judgements for m in j.results if m.judge == "nli"}
    assert reasons and all("nli_model" in why and "--nli-model" not in why for why in reasons)


def test_a_blank_path_never_writes_into_the_current_folder(tmp_path, monkeypatch):
    from rag.llm import FakeLLM

    monkeypatch.chdir(tmp_path)
    for call in (lambda: ragdoctor.evaluate([ROW], judges="lexical", out=""),
                 lambda: ragdoctor.evaluate([ROW], judges="lexical", out="  "),
                 lambda: ragdoctor.Pipeline(llm=FakeLLM()).run(["What is ZeRO?"], out=""),
                 lambda: ragdoctor.Pipeline(llm=FakeLLM()).run(["What is ZeRO?"], out=" \t"),
                 lambda: ragdoctor.Pipeline(llm=FakeLLM()).run(" ", out="run")):
        with pytest.raises(UsageError, match=r"^(out|questions): a blank value$"):
            call()
    with pytest.raises(UsageError, match="^config: a blank value$"):
        ragdoctor.Pipeline("")
    assert list(tmp_path.iterdir()) == []


def test_pipeline_run_refuses_a_question_given_for_a_path_and_arguments_of_the_wrong_type(tmp_path):
    from rag.llm import FakeLLM

    pipe = ragdoctor.Pipeline(llm=FakeLLM())
    for call, message in [
        (lambda: pipe.run("What is ZeRO?", out=tmp_path / "a"),
         r"^questions: 'What is ZeRO\?' is no file \(expected the path of a question-set JSONL, or a list of questions"),
        (lambda: pipe.run(["What is ZeRO?"], out=None), r"^out: expected a path .*got NoneType"),
        (lambda: pipe.run(["What is ZeRO?"], out=5), r"^out: expected a path .*got int"),
        (lambda: pipe.run(["What is ZeRO?"], out=tmp_path / "a", progress="yes"), "^progress: must be True or False"),
        (lambda: pipe.index(rebuild="yes"), "^rebuild: must be True or False"),
    ]:
        with pytest.raises(UsageError, match=message):
            call()
    assert not (tmp_path / "a").exists()
    guarded = ragdoctor.Pipeline({"generation": {"concurrency": 2}, "guardrails": {"enabled": True},
                                  "embedding": {"model": "fake"}, "index_dir": str(tmp_path / "idx")}, llm=FakeLLM())
    with pytest.raises(UsageError, match="^generation.concurrency above 1 does not combine with guardrails.enabled"):
        guarded.run(["What is ZeRO?"], out=tmp_path / "b")  # the config's fields, not the CLI's flags


def test_gate_refuses_what_ragdoctor_gate_refuses_in_the_apis_words(tmp_path):
    """EvalResult.gate calls the CLI's own check (cmd_eval.unused_estimate_options): ci_lower or ppi without a
    minimum, ci_lower beside ppi without ppi_fallback; its messages name the API's arguments."""
    result = ragdoctor.evaluate([ROW], judges="lexical", metrics="groundedness", out=tmp_path / "run")
    for kwargs, message in [
        ({"max_unmeasured": 0.1, "ci_lower": True}, r"^ci_lower=True chooses what a minimum is compared with, and "
                                                    r"there is no minimum \(thresholds=\{metric: minimum\}\)"),
        ({"max_unmeasured": 0.1, "ppi": True}, r"^ppi=True chooses what a minimum is compared with"),
        ({"thresholds": {"groundedness": 0.1}, "ppi": True, "ci_lower": True},
         r"^ci_lower=True would do nothing with ppi=True: .* for ppi_fallback=True: add that, or drop it$"),
        ({"thresholds": {"context_precision": 0.5}},
         r"the run did not evaluate context_precision .*evaluate it \(evaluate\(\.\.\., metrics=\.\.\., "
         r"judges=\.\.\.\)\) or drop the threshold$"),
    ]:
        with pytest.raises(UsageError, match=message) as err:
            result.gate(**kwargs)
        assert "--" not in str(err.value)
    assert result.gate({"groundedness": 0.5}, ppi=True, ci_lower=True, ppi_fallback=True).checks[0].passed is not None
    assert result.gate(max_unmeasured=0.1)  # the unmeasured share alone needs no estimate


def test_diagnose_on_a_folder_that_cannot_take_the_files_is_one_input_error_and_keeps_the_diagnoses(tmp_path, capsys):
    """A run folder that refuses the write (read-only, a full disk) raises InputError naming the file in one line, as
    `ragdoctor diagnose` exits 2 with that line; the diagnoses made are kept in result.diagnoses. (The write is made
    to fail by a folder where the file goes: the same OSError path as a read-only file system.)"""
    from ragdoctor.cli import main

    result = ragdoctor.evaluate([ROW, {**ROW, "id": "moon", "answer": "Optimizer momentum lives on the moon."}],
                                judges="lexical", metrics="groundedness", out=tmp_path / "run")
    (tmp_path / "run" / "diagnoses.jsonl").mkdir()  # the file's place is taken
    with pytest.raises(InputError) as err:
        result.diagnose()
    assert not isinstance(err.value, OSError) and "\n" not in str(err.value)
    assert str(err.value) == f"{tmp_path / 'run' / 'diagnoses.jsonl'}: Is a directory: the diagnoses could not be saved"
    assert [d.sample_id for d in result.diagnoses or []] == ["kv", "moon"]
    assert main(["diagnose", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err.strip() == f"ragdoctor: error: {err.value}"
    (tmp_path / "run" / "diagnoses.jsonl").rmdir()
    assert list(result.diagnose()["sample_id"]) == ["kv", "moon"]


def test_a_built_judge_that_says_ok_without_a_value_is_a_judge_failure_not_a_nan_mean(tmp_path):
    from corpora.records import MetricResult

    class NoValue:
        name, family, config_id = "novalue", "custom", "novalue:v1"

        def supports(self, metric):
            return metric == "groundedness"

        def judge(self, metric, traces):
            return [MetricResult(metric=metric, judge=self.name, value=None, status="ok") for _ in traces]

    result = ragdoctor.evaluate([ROW], judges=[NoValue()], metrics="groundedness", out=tmp_path / "run")
    (r,) = result.judgements[0].results
    assert r.status == "unmeasured" and r.value is None and r.reason.startswith(
        "judge failed: ValidationError: MetricResult: status 'ok' needs a value")  # what is wrong, in one line
    row = result.summary().iloc[0]
    assert row["n"] == 0 and row["n_unmeasured"] == 1 and result.warnings  # nothing measured: said, not a NaN mean


def test_the_package_lists_and_exports_its_api_and_errors_lazily():
    """dir() and help() list the lazy exports; the error classes the README names are there; none of it loads the
    library (the API, pandas, torch) until used."""
    code = ("import sys, ragdoctor; names = dir(ragdoctor); "
            "assert {'evaluate', 'Pipeline', 'EvalResult', 'GateResult', 'GateFailed', 'InputError', 'UsageError'} "
            "<= set(names), names; "
            "assert issubclass(ragdoctor.UsageError, ragdoctor.InputError) and issubclass(ragdoctor.GateFailed, "
            "AssertionError); "
            "import corpora.errors, ragdoctor.pytest_plugin; assert ragdoctor.UsageError is corpora.errors.UsageError; "
            "heavy = [m for m in ('torch', 'pandas', 'ragdoctor.api', 'eval', 'sentence_transformers') "
            "if m in sys.modules]; assert not heavy, heavy; print('ok')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr
    import pydoc

    text = pydoc.render_doc(ragdoctor, renderer=pydoc.plaintext)
    assert all(name in text for name in ("evaluate(", "class Pipeline", "class EvalResult", "class GateFailed"))


def test_summary_says_which_way_is_better_as_summary_json_does(tmp_path):
    result = ragdoctor.evaluate([ROW], judges="lexical", metrics="groundedness,noise_sensitivity",
                                out=tmp_path / "run")
    table = result.summary().set_index("metric")
    assert table.loc["groundedness", "higher_is_better"] == True  # noqa: E712 - a numpy bool
    assert table.loc["noise_sensitivity", "higher_is_better"] == False  # noqa: E712
    old = {**result.summary_data, "metrics": [{k: v for k, v in m.items() if k != "higher_is_better"}
                                              for m in result.summary_data["metrics"]]}  # a summary.json from before
    assert list(ragdoctor.EvalResult(result.run_dir, result.judgements, old).summary()["higher_is_better"]) == \
        list(result.summary()["higher_is_better"])


def test_ask_from_several_threads_builds_one_pipeline(tmp_path, monkeypatch):
    import threading

    from rag.llm import FakeLLM
    from ragdoctor import flow

    built = []
    real = flow.pipeline

    def counting(*args, **kwargs):
        built.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(flow, "pipeline", counting)
    config = {"embedding": {"model": "fake"}, "retrieval": {"rerank": False, "mode": "bm25"},
              "index_dir": str(tmp_path / "idx")}
    answers: list = []

    def ask(pipe):
        try:
            answers.append(pipe.ask("What does ZeRO stage 2 partition?").outcome)
        except Exception as exc:  # noqa: BLE001 - said in the assertion below
            answers.append(exc)

    with ragdoctor.Pipeline(config, llm=FakeLLM()) as pipe:
        threads = [threading.Thread(target=ask, args=(pipe,)) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert answers == ["answered"] * 3 and len(built) == 1, answers
