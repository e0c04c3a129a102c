"""Every page of app.py through streamlit's AppTest on the fixture runs, and `ragdoctor dashboard` itself."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.ragdoctor.dashboard.runs import APP, SAMPLES


def test_dashboard_command(runs, tmp_path, monkeypatch):
    import argparse
    import socket

    from corpora.errors import InputError, UsageError
    from ragdoctor import cmd_dashboard as cd

    parser = argparse.ArgumentParser()
    cd.register(parser.add_subparsers(dest="command"), lambda p: None)
    args = parser.parse_args(["dashboard", str(runs[0]), "--port", "9999"])
    assert args.host == "127.0.0.1" and args.port == 9999 and args.func is cd.cmd_dashboard
    cmd = cd.streamlit_command(cd.app_path(), [str(runs[0])], "127.0.0.1", 9999)
    assert cmd[1:4] == ["-m", "streamlit", "run"] and Path(cmd[4]) == APP
    flags = dict(zip(cmd[5:cmd.index("--"):2], cmd[6:cmd.index("--"):2]))
    assert flags["--server.address"] == "127.0.0.1" and flags["--server.port"] == "9999"
    assert flags["--server.headless"] == "true" and flags["--browser.gatherUsageStats"] == "false"
    assert cmd[cmd.index("--") + 1:] == [str(runs[0])]
    assert cd.url_for("0.0.0.0", 8501) == "http://127.0.0.1:8501" and cd.url_for("::1", 80) == "http://[::1]:80"
    assert cd.pick_port("127.0.0.1", 1234) == 1234 and cd.pick_port("127.0.0.1", 0) > 0
    with socket.socket() as taken:  # a given port another server holds: named, before streamlit starts
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(UsageError, match=rf"^--port {port}: cannot listen on 127\.0\.0\.1:{port} "):
            cd.pick_port("127.0.0.1", port)
    with pytest.raises(InputError, match="not found"):
        cd.cmd_dashboard(parser.parse_args(["dashboard", str(tmp_path / "nope")]))
    with pytest.raises(InputError, match="not a run folder"):
        cd.cmd_dashboard(parser.parse_args(["dashboard", str(tmp_path)]))
    started = []

    class FakePopen:  # the command streamlit would get, without starting it
        def __init__(self, cmd, **kw):
            started.append(cmd)

        def poll(self):
            return None

        def wait(self, timeout=None):
            return 0

    monkeypatch.setattr(cd.subprocess, "Popen", FakePopen)
    monkeypatch.setattr(cd, "wait_healthy", lambda url, proc, timeout: True)
    assert cd.cmd_dashboard(parser.parse_args(["dashboard", str(runs[0].parent), "--port", "8123"])) == 0
    assert started[0][-1] == str(runs[0].parent.resolve()) and "8123" in started[0]


# --- the app, page by page (AppTest) -------------------------------------------------------------------------------

def app(runs_text: str, page: str | None = None):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(APP), default_timeout=60)
    at.session_state["run_paths"] = runs_text
    at.run()
    if page:
        at.switch_page(f"ragdoctor/dashboard/pages/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def shown(markdown: str) -> str:
    """Markdown as it reads on the page, as far as the tests care: data text is backslash-escaped (dashboard.text.md)."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown)


def texts(at) -> str:
    return shown("\n".join([*(m.value for m in at.markdown), *(c.value for c in at.caption),
                             *(s.value for s in at.subheader), *(t.value for t in at.title),
                             *(h.value for h in at.header), *(e.value for e in at.error),
                             *(w.value for w in at.warning), *(i.value for i in at.info),
                             *(s.value for s in at.success)]))


def test_overview_page(runs):
    at = app(str(runs[0]))
    assert at.title[0].value == "Overview"
    body = texts(at)
    for heading in ("CI gate", "Metrics per judge, with 95% confidence intervals", "Failure categories",
                    "Unmeasured results"):
        assert heading in body
    assert "results could not be measured" in body
    # the repo's pyproject.toml sets [tool.ragdoctor.gate]; the fixture run has no nli judge and fails it
    assert "Gate FAILED" in body and "checks below threshold" in body
    at.text_input(key="gate_pyproject").set_value("no-such-pyproject.toml").run()  # a typo says so, never a pass
    assert any("no-such-pyproject.toml: file not found" in shown(e.value) for e in at.error)
    assert "No thresholds configured" in texts(at)
    at.text_input(key="gate_pyproject").set_value("").run()  # no file: no thresholds, no error
    assert "No thresholds configured" in texts(at) and not at.error
    metrics = at.dataframe[0].value
    assert {"groundedness", "answer_correctness"} <= set(metrics["metric"]) and "gate" in metrics.columns
    at.text_input(key="gate_extra").input("groundedness=0.99, recall@5:labels=0.1").run()
    assert not at.exception
    assert any("Gate FAILED: 1 of 2" in e.value for e in at.error)


def test_overview_without_runs_says_how_to_make_one(tmp_path):
    at = app(str(tmp_path))
    assert any("No run folder yet" in i.value for i in at.sidebar.info)
    assert any("Open a run folder" in i.value for i in at.info)


def test_samples_page_filters_and_drills_down(runs):
    at = app(str(runs[0]), "samples")
    table = at.dataframe[0].value
    assert len(table) == len(SAMPLES) and {"groundedness", "judges_disagree", "first_relevant_rank"} <= set(table.columns)
    at.multiselect(key="f_category").select("grounded_yet_hallucinated").run()
    assert list(at.dataframe[0].value["sample_id"]) == ["stale-block"]
    body = texts(at)
    assert "Sample `stale-block`" in body and "Rule that fired" in body and "grounded yet hallucinated" in body
    assert "background:#c9f2d0" in body  # the supported claim is highlighted in the answer
    labels = [shown(e.label) for e in at.expander]
    assert any(lbl.startswith("#1 · old#0") and "supports claim 1" in lbl for lbl in labels)
    assert any("relevant document" in lbl and "cur#0" in lbl for lbl in labels)
    assert "retrieved at rank 2" in body
    at.multiselect(key="f_category").unselect("grounded_yet_hallucinated").run()
    at.toggle(key="f_disagree").set_value(True).run()
    assert at.dataframe[0].value["judges_disagree"].all()
    picker = at.selectbox(key="samples_pick")
    picker.set_value(picker.options[-1]).run()
    assert not at.exception and f"Sample `{picker.options[-1]}`" in texts(at)


def test_samples_page_metric_range_and_sort(runs):
    at = app(str(runs[0]), "samples")
    at.slider(key="f_range_groundedness").set_value((0.9, 1.0)).run()
    view = at.dataframe[0].value
    assert len(view) and (view["groundedness"] >= 0.9).all()
    at.selectbox(key="f_sort").set_value("answer_correctness").run()
    at.toggle(key="f_desc").set_value(True).run()
    vals = at.dataframe[0].value["answer_correctness"].dropna().tolist()
    assert vals == sorted(vals, reverse=True)
    at.selectbox(key="samples_pick").set_value(at.dataframe[0].value["sample_id"].iloc[-1]).run()
    assert not at.exception and "Sample `" in texts(at)


def test_disagreements_page(runs):
    at = app(str(runs[0]), "disagreements")
    body = texts(at)
    assert "Grounded yet wrong" in body and "Ungrounded and wrong" in body  # every quadrant explained
    assert "Judge against judge" in body and "Neither is ground truth" in body
    assert at.selectbox(key="d_quadrant").value == "grounded_wrong"
    assert "Sample `stale-block`" in body  # the instructive quadrant's first sample is open
    # the samples in no cell are counted, with why: the pipeline error is unmeasured, the refusal left out
    assert "Unmeasured: 1** (the pipeline failed for this sample 1)" in body and "Left out: " in body
    at.selectbox(key="d_quadrant").set_value("unmeasured").run()
    assert not at.exception and "broken" in at.selectbox(key="d_pick").options
    at.selectbox(key="d_view").set_value(("answer_relevance", "answer_correctness")).run()
    assert not at.exception and "On-topic yet wrong" in texts(at)
    at.selectbox(key="d_view").set_value(("groundedness", "answer_correctness")).run()
    at.selectbox(key="d_xj_groundedness").set_value("strict").run()
    assert not at.exception
    metric = at.selectbox(key="jj_metric")
    assert "groundedness" in metric.options
    metric.set_value("groundedness").run()
    assert not at.exception and any(df.value.shape == (2, 2) for df in at.dataframe)  # the 2x2 per-sample table


def test_retrieval_page(runs):
    at = app(f"{runs[0]}\n{runs[1]}", "retrieval")
    body = texts(at)
    assert "Recall@k" in body and "Rank of the first relevant chunk" in body and "lower bound" in body
    wide = at.dataframe[0].value
    assert "recall@5" in wide.columns and any("hybrid" in str(i) for i in wide.index)
    at.multiselect(key="r_overlay").select(str(runs[1])).run()
    assert not at.exception and any(runs[1].name in str(i) for i in at.dataframe[0].value.index)


def test_compare_page(runs):
    at = app(f"{runs[1]}\n{runs[0]}", "compare")
    body = texts(at)
    assert "Samples whose category changed" in body and "regression: 1" in body
    changed = next(d.value for d in at.dataframe if "category_a" in d.value.columns)
    assert changed["sample_id"].iloc[0] == "ok-block" and changed["change"].iloc[0] == "regression"
    assert "Sample `ok-block`" in body  # both runs' drill-downs of the first changed sample
    at1 = app(str(runs[0]), "compare")
    assert any("Open two or more run folders" in i.value for i in at1.info)


def test_playground_renders_without_a_model(runs):
    at = app(str(runs[0]), "playground")
    assert at.title[0].value == "Playground" and at.text_area(key="pg_question").value == ""
    next(b for b in at.button if b.label == "Ask").click().run()
    assert not at.exception and any("Type a question first" in w.value for w in at.warning)


def test_playground_answers_judges_and_diagnoses_live(runs, tmp_path):
    """End to end with the fake embedder and the fake LLM behind a real loopback OpenAI-compatible server."""
    from rag.fake_server import FakeOpenAIServer

    with FakeOpenAIServer() as srv:
        at = app(str(runs[0]), "playground")
        at.text_area(key="pg_question").input("What does ZeRO stage 2 partition?")
        at.text_input(key="pg_reference").input("Optimizer states and gradients.")
        at.text_input(key="pg_index").input(str(tmp_path / "index"))
        at.text_input(key="pg_embedder").input("fake")
        at.text_input(key="pg_base_url").input(srv.base_url)
        at.text_input(key="pg_model").input("fake-llm")
        next(b for b in at.button if b.label == "Ask").click().run(timeout=180)
        assert not at.exception, [e.value for e in at.exception]
        assert len(srv.requests) == 1
    body = texts(at)
    assert "Sample `playground`" in body and "Rule that fired" in body
    metrics = next(d.value for d in at.dataframe if "metric" in d.value.columns and "status" in d.value.columns)
    assert {"lexical", "embedding"} <= set(metrics["judge"]) and "answer_correctness" in set(metrics["metric"])
    assert any(e.label == "The trace (JSON)" for e in at.expander)


def test_playground_context_budget(runs, tmp_path):
    """A budget packs the chunks into that many tokens (the page says how many it used); one under 32 tokens is
    refused in one line naming the setting, before any model call."""
    from rag.fake_server import FakeOpenAIServer

    with FakeOpenAIServer() as srv:
        at = app(str(runs[0]), "playground")
        at.text_area(key="pg_question").input("What does ZeRO stage 2 partition?")
        at.text_input(key="pg_index").input(str(tmp_path / "index"))
        at.text_input(key="pg_embedder").input("fake")
        at.text_input(key="pg_base_url").input(srv.base_url)
        at.text_input(key="pg_model").input("fake-llm")
        at.number_input(key="pg_budget").set_value(16)
        next(b for b in at.button if b.label == "Ask").click().run(timeout=180)
        assert not at.exception and len(srv.requests) == 0
        assert any(e.value.startswith("retrieval.context_tokens:") for e in at.error), [e.value for e in at.error]
        at.number_input(key="pg_budget").set_value(96)
        next(b for b in at.button if b.label == "Ask").click().run(timeout=180)
        assert not at.exception, [e.value for e in at.exception]
        assert len(srv.requests) == 1
    caption = next(c.value for c in at.caption if c.value.startswith("Context budget:"))
    used = int(caption.split(" chunk(s), ")[1].split(" of ")[0])
    assert 0 < used <= 96 and "of 96 tokens" in caption


def test_index_lab_page(tmp_path):
    import json

    import numpy as np

    from eval.index_lab import run_lab, sample_queries
    x = np.random.default_rng(0).standard_normal((400, 8)).astype("float32")
    q, ids = sample_queries(x, 20)
    out = tmp_path / "lab.json"
    out.write_text(json.dumps(run_lab(x, q, doc_ids=[str(i) for i in range(400)], query_ids=ids, qrels=None)))
    at = app(str(tmp_path), "index_lab")
    assert any("No lab file" in i.value and "ragdoctor index-lab --out" in i.value for i in at.info)
    at.text_input(key="il_path").set_value(str(out)).run()
    assert not at.exception and "400 vectors" in texts(at) and "nDCG@10 unmeasured" in texts(at)
    assert "ivfpq+refine sq8" in at.dataframe[0].value["name"].tolist() and "HNSW" in texts(at)
    (tmp_path / "other.json").write_text(json.dumps({"rows": [{"name": "x"}]}))  # another lab's file: named, no crash
    at.text_input(key="il_path").set_value(str(tmp_path / "other.json")).run()
    assert not at.exception and any("not an index lab file" in e.value for e in at.error)


def test_retrieval_lab_page(tmp_path):
    import json

    from tests.ragdoctor.dashboard.runs import retrieval_lab_json

    at = app(str(tmp_path), "retrieval_lab")
    assert any("No lab file" in i.value and "ragdoctor retrieval-lab --out" in i.value for i in at.info)
    out = tmp_path / "lab.json"
    out.write_text(json.dumps(retrieval_lab_json(0.05)))
    at.text_input(key="rl_path").set_value(str(out)).run()
    assert not at.exception and "120 labelled queries" in texts(at)
    assert any("A confirmed gain" in s.value and "hybrid zscore w=0.5" in shown(s.value) for s in at.success)
    assert at.dataframe[0].value["name"].tolist()[0] == "hybrid zscore w=0.5"
    out.write_text(json.dumps(retrieval_lab_json(0.0)))  # the same as the current: a tie, keep it
    at.run()
    assert not at.exception and any("keep the current configuration" in i.value for i in at.info)
    out.write_text("[1, 2]")
    at.run()
    assert not at.exception and any("not a lab file" in e.value for e in at.error)


def test_a_folder_that_is_not_a_run_is_named_not_ignored(runs, tmp_path):
    """A folder that exists but holds no results or traces (summary.json alone) is said to be no run folder."""
    import shutil

    odd = tmp_path / "summary-only"
    odd.mkdir()
    shutil.copy(runs[0] / "summary.json", odd / "summary.json")
    at = app(str(odd))
    assert any(f"not a run folder (no results.jsonl, results.parquet or traces.jsonl): {odd}" in shown(w.value)
               for w in at.sidebar.warning)
    at = app(f"{runs[0]}\n{odd}")  # next to a real run: still named, and the real run opens
    assert at.title[0].value == "Overview" and any(str(odd) in shown(w.value) for w in at.sidebar.warning)
