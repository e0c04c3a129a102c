"""The flow (ragdoctor/flow.py) and the commands' glue (cmd_*.py, options.py): what the CLI, the dashboard and bench/
all call, in process, with fake models."""
import argparse
import json
from pathlib import Path

import pytest

from corpora.errors import UsageError
from corpora.records import Chunk, Question, Trace
from corpora.run_folder import RunFolder
from eval.gate import GateConfig
from eval.judges.registry import DEFAULT_METRICS, JudgeOptions, make_judges
from rag.llm import FakeLLM
from ragdoctor import flow
from ragdoctor.cmd_eval import default_eval_dir, gate_config, render_checks, render_eval_summary
from ragdoctor.cmd_pipeline import default_run_dir, run_name
from ragdoctor.options import config_from_args, pipeline_options

ROWS = [{"id": "a", "question": "What does the KV cache store?",
         "contexts": [{"id": "kv#0", "doc_id": "kv", "text": "The KV cache stores keys and values for every token."}],
         "answer": "The KV cache stores keys and values for every token.",
         "reference": "It stores the keys and values of every token.", "relevant_ids": ["kv"]}]


def test_selection_defaults_to_the_fast_judges_and_the_metrics_they_measure():
    s = flow.Selection.of()
    assert s.judges[-3:] == ["lexical", "embedding", "labels"] and s.metrics == list(DEFAULT_METRICS)
    assert flow.Selection.of("labels").metrics == ["recall@5", "mrr@10", "ndcg@10"]
    assert flow.Selection.of(["lexical"], ["groundedness"]) == flow.Selection(["lexical"], ["groundedness"])
    with pytest.raises(UsageError, match="no judge among labels measures 'groundedness'"):
        flow.Selection.of("labels", "groundedness")


def test_evaluate_diagnose_and_gate_a_file(tmp_path):
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in ROWS) + "not json\n")
    ev = flow.evaluate_file(src, tmp_path / "run", flow.Selection.of("lexical,labels"), progress=False)
    assert ev.new == 1 and ev.input_errors and flow.nothing_measured(ev.summary) is None
    assert "groundedness" in render_eval_summary(ev.summary)
    judgements, diagnoses, report = flow.diagnose_run(tmp_path / "run")
    assert [d.category for d in diagnoses] == ["ok"] and report["n_samples"] == 1
    code, checks = flow.gate_run(tmp_path / "run", GateConfig({"groundedness": 0.9}))
    assert code == 0 and render_checks(code, checks).endswith("gate: passed (1/1 checks)")
    assert flow.nothing_measured({"metrics": [{"n": 0, "unmeasured_reasons": {"judge failed": 2}}]}) == \
        "nothing was measured (judge failed)"


def test_diagnosing_a_run_whose_evaluation_stopped_early_says_so(tmp_path, caplog):
    rows = [{**ROWS[0], "id": f"s{i}"} for i in range(3)]
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    flow.evaluate_file(src, tmp_path / "run", flow.Selection.of("lexical"), progress=False)
    _, _, report = flow.diagnose_run(tmp_path / "run")
    assert report["samples"] == {"judged": 3, "in_run": 3}
    results = tmp_path / "run" / "results.jsonl"  # as a killed evaluation leaves it: the last sample not judged yet
    results.write_text("".join(ln + "\n" for ln in results.read_text().splitlines() if '"s2"' not in ln))
    with caplog.at_level("WARNING"):
        judgements, _, report = flow.diagnose_run(tmp_path / "run")
    assert [j.sample_id for j in judgements] == ["s0", "s1"] and report["samples"] == {"judged": 2, "in_run": 3}
    assert "1 of the run's 3 samples are not judged yet" in caplog.text


def test_judge_one_is_in_memory(tmp_path):
    t = Trace(sample_id="s", question="Q?", answer="I don't know based on the provided documents.",
              contexts=[Chunk(chunk_id="c", text="x", rank=1)], metadata={"kind": "unanswerable"})
    judged = flow.judge_one(t, make_judges(["lexical"], JudgeOptions()), ["groundedness", "answer_correctness"])
    assert judged.diagnosis.category == "ok" and judged.judgement.get("answer_correctness").value == 1.0


# --judge-max-chars: the llm judge's characters per ask -------------------------------------------------------------
NEEDLE = "The Glimmer river flows through Zorbania."
LONG_ROW = {"id": "z", "question": "Which river flows through Zorbania?", "answer": "The Glimmer.",
            "contexts": [{"id": "z#0", "text": "Filler text about the weather and cooking. " * 150 + NEEDLE}]}


def _judged(run: Path) -> tuple[list[str], dict]:
    """The judges' names of the evaluation in ``run`` and its llm result's evidence."""
    config = json.loads((run / "config.json").read_text())
    last = json.loads((run / "results.jsonl").read_text().splitlines()[-1])
    return config["judges"], next(r for r in last["results"] if r["judge"] == "llm")["evidence"] or {}


def test_judge_max_chars_reaches_the_llm_judge_names_it_and_a_changed_value_rejudges(tmp_path, monkeypatch, capsys):
    """--judge-max-chars (the API's judge_max_chars) is the llm judge's max_chars: a passage the default 3,000 cut is
    sent whole; the judge's name carries the value, so a rerun into the same folder with another value judges again
    instead of resuming; the default given explicitly is the judge without it."""
    from rag.fake_server import FakeOpenAIServer
    from ragdoctor.cli import main

    monkeypatch.setenv("RAGDOCTOR_CACHE", str(tmp_path / "cache"))  # a fresh judge cache: every ask reaches the server
    src = tmp_path / "rows.jsonl"
    src.write_text(json.dumps(LONG_ROW) + "\n")
    passage = LONG_ROW["contexts"][0]["text"]
    assert 3_000 < len(passage) < 8_000
    llm = FakeLLM({"Passage:": "YES"})
    with FakeOpenAIServer(llm) as srv:
        base = ["eval", str(src), "--judges", "llm", "--metrics", "context_precision", "--judge-base-url",
                srv.base_url, "--out", str(tmp_path / "ev")]
        assert main(base) == 0
        names, evidence = _judged(tmp_path / "ev")
        assert "@max_chars" not in names[0] and "judge_cut" in evidence  # the default: cut to 3,000 characters
        assert passage not in llm.calls[-1][-1]["content"]
        assert main([*base, "--judge-max-chars", "8000"]) == 0
        assert "(1 judged, 0 resumed" in capsys.readouterr().out  # another judge: nothing resumed
        names, evidence = _judged(tmp_path / "ev")
        assert names[0].endswith("@max_chars=8000") and "judge_cut" not in evidence, (names, evidence)
        assert passage in llm.calls[-1][-1]["content"]  # sent whole
        assert main([*base, "--judge-max-chars", "3000"]) == 0  # the default, given: the first run's judge
        assert "@max_chars" not in _judged(tmp_path / "ev")[0][0]
        ev = flow.evaluate_file(src, tmp_path / "ev", flow.Selection.of("llm", "context_precision"),
                                judge_base_url=srv.base_url, judge_max_chars=8000, progress=False)
        assert ev.resumed == 1 and ev.new == 0  # the same judge as the flag's: resumed

    judges = make_judges(["llm"], JudgeOptions(llm_factory=FakeLLM, llm_max_chars=20_000))
    assert judges[0].llm_scorer.max_chars == 20_000
    assert make_judges(["llm"], JudgeOptions(llm_factory=FakeLLM))[0].llm_scorer.max_chars == 3_000


def test_answer_questions_into_a_run_folder(tmp_path):
    cfg = config_from_args(_args(tmp_path, ["--embedder", "fake", "--index-dir", str(tmp_path / "idx")]))
    questions = [Question(id="q1", question="What does ZeRO stage 2 partition?", relevant_doc_ids=["nowhere"])]
    result = flow.answer_questions(cfg, tmp_path / "run" / "traces.jsonl", questions=questions, llm=FakeLLM(),
                                   progress=False)
    assert result.new == 1 and result.traces[0].chunks
    summary = flow.write_run_summary(RunFolder(tmp_path / "run"), result.traces)
    assert summary["questions"] == 1 and (tmp_path / "run" / "run_summary.json").exists()


def _args(tmp_path: Path, argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    pipeline_options(parser)
    return parser.parse_args(argv)


def test_the_commands_glue(tmp_path):
    args = _args(tmp_path, ["--top-k", "3", "--mode", "bm25"])
    cfg = config_from_args(args)
    assert cfg.retrieval.top_k == 3 and cfg.retrieval.mode == "bm25"
    assert default_run_dir(None, cfg) == Path("runs") / f"run-{cfg.config_hash()}"
    assert default_eval_dir(Path("runs/x/traces.jsonl"), None) == Path("runs/x")
    assert default_eval_dir(Path("mine.jsonl"), "n") == Path("runs/n")
    with pytest.raises(UsageError, match="is not a folder name"):
        run_name("a/b")
    (tmp_path / "pyproject.toml").write_text("[tool.ragdoctor.gate]\nmin = { groundedness = 0.8 }\n")
    g = gate_config(tmp_path / "pyproject.toml", ["answer_correctness:lexical=0.5"], 0.1, ci_lower=True)
    assert g.minimums == {"groundedness": 0.8, "answer_correctness:lexical": 0.5} and g.use_ci_lower
