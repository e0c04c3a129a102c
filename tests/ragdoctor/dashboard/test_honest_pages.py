"""Audit, session 27: what the pages say about runs that are incomplete, odd or hostile is true, in one line, never a
traceback: a cut-off results line, a half-judged or never-judged run, the quadrant's counts against `ragdoctor
diagnose`, runs that share no samples, data text that reads as markdown, choices across pages, ~ paths, lab files of
another shape, the calibrated table's notes, and the Label page's questions a run cannot use."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from corpora.errors import InputError
from corpora.jsonl import append_json_line
from corpora.records import Chunk, Judgement, MetricResult
from eval.judges.lexical import LexicalScorer
from eval.judges.scorer import ScorerJudge
from eval.judging import evaluate
from ragdoctor.dashboard import compare_data as cd
from ragdoctor.dashboard import data as rd
from ragdoctor.dashboard import label_data as ld
from ragdoctor.dashboard import text, widgets
from tests.ragdoctor.dashboard.runs import LLM_METRICS, SAMPLES, make_trace
from tests.ragdoctor.dashboard.test_pages import app, shown, texts


def lexical_run(run_dir: Path, traces: list, all_traces: list | None = None) -> Path:
    """``traces`` evaluated by the lexical judge into ``run_dir``; ``all_traces`` (default: the same) in its log."""
    run_dir.mkdir(parents=True, exist_ok=True)
    for t in all_traces if all_traces is not None else traces:
        append_json_line(run_dir / "traces.jsonl", t)
    evaluate(traces, metrics=LLM_METRICS, judges=[ScorerJudge(LexicalScorer())], run=run_dir, progress=False)
    return run_dir


def body_of(at) -> str:
    return texts(at) + "\n" + "\n".join(shown(e.label) for e in at.expander)


# --- 1. a cut-off last line, a damaged line ---------------------------------------------------------------------------

def test_a_results_line_cut_off_mid_write_opens_every_page(runs, tmp_path):
    run_dir = shutil.copytree(runs[0], tmp_path / "torn")
    config = json.loads((run_dir / "config.json").read_text())
    config["samples"]["late"] = "h-late"  # an evaluation in progress: its next line is half written
    config["run_key"] = "in-progress"
    (run_dir / "config.json").write_text(json.dumps(config))
    line = Judgement(sample_id="late", eval_hash=config["eval_hash"], sample_hash="h-late",
                     results=[MetricResult.ok("groundedness", "lexical", 0.5)]).model_dump_json()
    with open(run_dir / "results.jsonl", "a", encoding="utf-8") as fh:
        fh.write(line[: len(line) // 2])
    run = rd.load_run(run_dir)
    assert "late" not in run.sample_ids and set(run.sample_ids) == set(SAMPLES)
    for page in (None, "samples", "disagreements", "retrieval", "label"):
        at = app(str(run_dir), page)  # app() asserts no exception
        assert not any("Could not read" in e.value for e in at.error), [e.value for e in at.error]
        if page is None:
            assert "Evaluation incomplete: 7 of 8 samples judged" in texts(at)


def test_a_damaged_results_line_is_one_error_line_naming_it(runs, tmp_path):
    run_dir = shutil.copytree(runs[0], tmp_path / "damaged")
    (run_dir / "results.parquet").unlink()
    config = json.loads((run_dir / "config.json").read_text())
    lines = (run_dir / "results.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    lines[0] = json.dumps({**first, "results": 5})  # valid JSON, not a judgement: the sample has no other line
    (run_dir / "results.jsonl").write_text("\n".join(lines) + "\n")
    assert config["samples"][first["sample_id"]] == first["sample_hash"]
    with pytest.raises(InputError, match=r"results\.jsonl:1: field 'results'"):
        rd.load_run(run_dir)
    at = app(str(run_dir))
    assert len(at.error) == 1 and "results.jsonl:1: field 'results'" in shown(at.error[0].value)
    assert "\n" not in at.error[0].value


# --- 2, 3. incomplete and unevaluated runs ---------------------------------------------------------------------------

def test_a_half_judged_run_gives_no_gate_verdict_as_the_gate_command_does(runs, tmp_path):
    from eval.gate import load_summary

    run_dir = shutil.copytree(runs[0], tmp_path / "half")
    for name in ("summary.json", "results.parquet"):
        (run_dir / name).unlink()
    lines = (run_dir / "results.jsonl").read_text().splitlines()
    (run_dir / "results.jsonl").write_text("\n".join(lines[:4]) + "\n")  # killed after 4 of 7 samples
    with pytest.raises(InputError, match="no summary.json"):  # `ragdoctor gate` exits 2
        load_summary(run_dir)
    run = rd.load_run(run_dir)
    status = rd.evaluation_status(run)
    assert status["note"].startswith("evaluation incomplete: 4 of 7 samples judged; rerun `ragdoctor eval`")
    assert not status["gate"] and run.summary is not None  # the means are shown, provisional
    at = app(str(run_dir))
    body = texts(at)
    assert "Evaluation incomplete: 4 of 7 samples judged" in body and "No gate verdict" in body
    assert "Gate passed" not in body and "Gate FAILED" not in body and "Provisional" in body


def test_a_run_not_evaluated_or_partly_evaluated_says_so(tmp_path):
    traces = [make_trace(sid, spec) for sid, spec in SAMPLES.items()]
    only = tmp_path / "traces-only"
    only.mkdir()
    for t in traces:
        append_json_line(only / "traces.jsonl", t)
    body = texts(app(str(only)))
    assert "has not been evaluated: none of its 7 samples" in body and "Every applicable result" not in body
    part = lexical_run(tmp_path / "part", traces[:3], traces)  # `eval --limit 3`: a complete evaluation of 3
    status = rd.evaluation_status(rd.load_run(part))
    assert status["complete"] and len(status["unjudged"]) == 4
    body = texts(app(str(part)))
    assert "4 of the run's 7 samples have not been evaluated" in body
    assert "Every applicable result was measured" not in body
    # the repo's thresholds include recall@5, which this lexical-only evaluation never measured: no verdict, the
    # reason (as `ragdoctor gate` exits 2 on it), never "Gate FAILED"
    assert "No gate verdict: threshold 'recall@5': the run did not evaluate recall@5" in body
    assert "Gate FAILED" not in body and "Gate passed" not in body


# --- 4. the quadrant counts as `ragdoctor diagnose` does -------------------------------------------------------------

def test_the_preferred_quadrant_is_the_classifiers_per_sample_pick(tmp_path):
    from diagnostics.disagreement import metric_disagreements

    run_dir = tmp_path / "picks"
    run_dir.mkdir()
    judgements = []
    for sid, g_nli in (("ok-block", 1.0), ("stale-block", None), ("miss-lora", None), ("ok-lora", 0.0)):
        nli = MetricResult.unmeasured("groundedness", "nli", "script") if g_nli is None else \
            MetricResult.ok("groundedness", "nli", g_nli)
        judgements.append(Judgement(sample_id=sid, trace=make_trace(sid, SAMPLES[sid]), results=[
            nli, MetricResult.ok("groundedness", "lexical", 1.0 if sid == "stale-block" else 0.0),
            MetricResult.ok("answer_correctness", "lexical", 0.0 if sid != "ok-lora" else 1.0)]))
    for j in judgements:
        append_json_line(run_dir / "results.jsonl", j)
    run = rd.load_run(run_dir)
    expected = {q: v["count"] for q, v in metric_disagreements(judgements)["groundedness_x_correctness"].items()
                if isinstance(v, dict) and "count" in v}
    x = rd.picked_column("groundedness")
    quads = rd.quadrant_summary(rd.quadrant_points(run)).set_index("quadrant")
    assert {q: int(quads.loc[q, "count"]) for q in quads.index} == expected and sum(expected.values()) == 4
    # one judge alone: the samples it did not measure are counted as unmeasured, never dropped
    nli = rd.quadrant_summary(rd.quadrant_points(run, x_judge="nli")).set_index("quadrant")
    assert nli["count"].sum() == 4 and nli.loc["unmeasured", "count"] == 2
    assert nli.loc["unmeasured", "why"] == {"groundedness": 2}
    s = run.samples.set_index("sample_id")  # the bare column stays one judge's (the gate's, to_pandas's)
    assert pd.isna(s.loc["stale-block", "groundedness"]) and s.loc["stale-block", x] == 1.0
    at = app(str(run_dir), "disagreements")
    assert "per sample" in at.selectbox(key="d_xj_groundedness").help


# --- 5. runs that share no samples -----------------------------------------------------------------------------------

def test_comparing_runs_that_share_no_samples_says_it_is_unpaired(runs, tmp_path):
    other = lexical_run(tmp_path / "other", [make_trace(f"b-{sid}", spec) for sid, spec in SAMPLES.items()])
    one = lexical_run(tmp_path / "one", [make_trace("solo", SAMPLES["ok-block"])])
    cmp = cd.compare_runs(rd.load_run(runs[0]), rd.load_run(other))
    assert cmp["common"] == 0 and set(cmp["metrics"].dropna(subset=["delta"])["ci"]) == {"unpaired"}
    small = cd.compare_runs(rd.load_run(runs[0]), rd.load_run(one))["metrics"].dropna(subset=["delta"])
    assert set(small["change"]) == {"too few samples"} and small["delta_ci_low"].isna().all()
    body = texts(app(f"{other}\n{runs[0]}", "compare"))
    assert "share no samples" in body and "unpaired rows" in body and "its paired 95% CI" not in body
    assert "No sample changed category" not in body
    body = texts(app(f"{one}\n{runs[0]}", "compare"))
    assert "too few samples" in body and "No sample changed category" not in body


# --- 6, 7. data text never reads as markdown, maths, a directive or HTML ---------------------------------------------

HOSTILE = "$5 or $10 :red[x] ![t](http://127.0.0.1:9/p.png) **b**"


def test_text_helpers_escape_markdown_maths_directives_and_html():
    md_it = pytest.importorskip("markdown_it").MarkdownIt("commonmark")
    assert text.md(HOSTILE) == r"\$5 or \$10 \:red\[x\] \!\[t\]\(http\:\/\/127\.0\.0\.1\:9\/p\.png\) \*\*b\*\*"
    assert "<img" not in md_it.render(text.md(HOSTILE)) and "<strong>" not in md_it.render(text.md(HOSTILE))
    for sep in ("\r\r", "\r\n\r\n", "\n\n", "\u2028\u2028", "\u2029", "\x0b\x0b", "\x0c\x0c", "\x85\x85"):
        html = md_it.render("<div>" + text.html(f"a{sep}# Heading {HOSTILE}") + "</div>")
        assert "<h1>" not in html and "<img" not in html and "<strong>" not in html, repr(sep)
        assert "$" not in text.html(f"a{sep}{HOSTILE}") and "\r" not in text.html(f"a{sep}")
    inline = md_it.render("x " + text.html(HOSTILE) + " y")  # inline HTML: markdown around it is still read
    assert "<img" not in inline and "<strong>" not in inline
    assert text.code("a`b") == "``a`b``" and text.code("`x") == "`` `x ``"
    answer = widgets.highlighted_answer([{"text": "a", "verdict": 'x" onclick="alert(1)', "claim": 1}])
    assert 'onclick="' not in answer and "&quot; onclick=&quot;" in answer


def test_data_text_is_escaped_on_the_pages(tmp_path):
    t = make_trace("s1", SAMPLES["broken"])
    chunk = Chunk(chunk_id="c$1:red[x]", doc_id="d$2", rank=1, score=1.0, text="LoRA $5 :red[y]", title=HOSTILE,
                  flags=["$f :blue[z]"])
    t = t.model_copy(update={"contexts": [chunk], "candidates": [], "error": "boom $x$ :red[z] ![e](http://h/e.png)"})
    run_dir = tmp_path / "run $1 :red[n]"
    run_dir.mkdir()
    append_json_line(run_dir / "traces.jsonl", t)
    at = app(str(run_dir), "samples")
    raw = [re.sub(r"(`+).*?\1", "", v)  # a code span shows its text literally
           for v in [*(c.value for c in at.caption), *(e.value for e in at.error), *(e.label for e in at.expander),
                     *(m.value for m in at.markdown)]]
    for bad in ("$5", "$10", ":red[", "![t]", "![e]", "$x$", ":blue[", "c$1", "d$2"):  # none unescaped
        pattern = re.compile(r"(?<!\\)" + re.escape(bad))
        assert not any(pattern.search(v) for v in raw), (bad, [v for v in raw if pattern.search(v)])
    body = body_of(at)
    assert HOSTILE in body and "Pipeline error: boom $x$ :red[z]" in body and "#1 · c$1:red[x]" in body
    assert "run **run $1 :red[n]**" in body


# --- 8, 9. choices across pages; a ~ path ---------------------------------------------------------------------------

def test_choices_survive_a_visit_to_another_page(runs):
    at = app(str(runs[0]), "label")
    at.multiselect(key="label_metrics").unselect("context_precision").run()
    at.selectbox(key="label_stratify").set_value("answer_correctness").run()
    at.switch_page("ragdoctor/dashboard/pages/samples.py").run()
    at.text_input(key="f_text").input("block").run()
    at.selectbox(key="f_sort").set_value("groundedness").run()
    at.toggle(key="f_desc").set_value(True).run()
    at.switch_page("ragdoctor/dashboard/pages/overview.py").run()
    at.switch_page("ragdoctor/dashboard/pages/samples.py").run()
    assert at.text_input(key="f_text").value == "block" and at.selectbox(key="f_sort").value == "groundedness"
    assert at.toggle(key="f_desc").value and len(at.dataframe[0].value) == 3
    at.switch_page("ragdoctor/dashboard/pages/label.py").run()
    assert not at.exception
    assert at.multiselect(key="label_metrics").value == ["groundedness", "answer_correctness"]
    assert at.selectbox(key="label_stratify").value == "answer_correctness"


def test_a_run_typed_with_a_tilde_is_found(runs, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    shutil.copytree(runs[0], tmp_path / "run-a")
    at = app("~/run-a")
    assert at.title[0].value == "Overview" and not at.sidebar.warning, [w.value for w in at.sidebar.warning]
    at = app("~/no-such-run")
    assert any("not found: ~/no-such-run" in shown(w.value) for w in at.sidebar.warning)


# --- 10. lab files whose rows lack fields ----------------------------------------------------------------------------

@pytest.mark.parametrize(("page", "key", "lab", "why"), [
    ("index_lab", "il_path", {"rows": [{"name": "flat", "index_bytes": 1024}], "n_vectors": 10, "dim": 4,
                              "n_queries": 2, "nlist": 1, "faiss_version": "x"}, "rows[0] has no 'factory'"),
    ("retrieval_lab", "rl_path", {"rows": [{"name": "a", "rerank_weight": None, "ndcg@10_choose": 0.5,
                                            "ndcg@10_confirm": 0.4}], "current": "a", "n_queries": 3, "n_choose": 1,
                                  "n_confirm": 2, "chosen": "a", "confirm": None}, "rows[0] has no 'ndcg@10'"),
    ("retrieval_lab", "rl_path", {"rows": [], "current": "a", "n_queries": 3, "n_choose": 1, "n_confirm": 2},
     "no rows"),
])
def test_a_lab_file_whose_rows_lack_fields_is_one_error_line(tmp_path, page, key, lab, why):
    path = tmp_path / "lab.json"
    path.write_text(json.dumps(lab))
    at = app(str(tmp_path), page)
    at.text_input(key=key).set_value(str(path)).run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.error) == 1 and why in shown(at.error[0].value)


# --- 11. the calibrated table says what `ragdoctor summary` says -----------------------------------------------------

def test_the_calibrated_table_has_the_notes_and_intervals_of_ragdoctor_summary():
    from ragdoctor.cmd_labels import render_calibrated

    row = {"metric": "groundedness", "judge": "lexical", "n_labels": 34, "judge_mean": 0.52, "status": "ok",
           "reason": None, "method": "ppi++", "mean": 0.4, "ci_low": 0.24, "ci_high": 0.56, "lam": 0.25,
           "agreement": {"n": 31, "auroc": 0.39, "auroc_ci": [0.19, 0.6], "accuracy": 0.39,
                         "accuracy_ci": [0.24, 0.56], "reason": "3 sample(s) left out: their labellers disagree"}}
    table = rd.calibrated_table([row]).iloc[0]
    note = "ppi++, lambda 0.25; 3 sample(s) left out: their labellers disagree"
    assert table["note"] == note and note in render_calibrated([row])
    assert (table["lambda"], table["AUROC CI low"], table["AUROC CI high"]) == (0.25, 0.19, 0.6)
    assert (table["accuracy CI low"], table["accuracy CI high"]) == (0.24, 0.56)


# --- 12. the Label page asks only what the run can use ---------------------------------------------------------------

def test_the_label_page_leaves_out_questions_the_run_cannot_use(tmp_path):
    traces = [make_trace(sid, spec).model_copy(update={"contexts": [], "candidates": []})
              for sid, spec in SAMPLES.items() if sid in ("ok-block", "stale-block", "ok-lora")]
    run_dir = lexical_run(tmp_path / "no-contexts", traces)
    cannot = ld.unusable(rd.load_run(run_dir))
    assert set(cannot) == {"groundedness", "context_precision"} and "retrieved contexts" in cannot["groundedness"]
    at = app(str(run_dir), "label")
    assert at.multiselect(key="label_metrics").value == ["answer_correctness"]
    assert any("cannot use labels of groundedness" in w.value and "left out" in w.value for w in at.warning)
    assert not any(b.key.startswith("lab_groundedness") for b in at.button)


# --- audit: a chunk from an imported record, without a retriever score or a document id --------------------------------

def test_a_chunk_without_a_score_or_document_says_not_recorded_not_none(tmp_path):
    t = make_trace("s1", SAMPLES["ok-lora"])
    bare = Chunk(chunk_id="c1", rank=1, text=t.contexts[0].text)  # a generic JSONL context: text and id only
    run_dir = lexical_run(tmp_path / "bare", [t.model_copy(update={"contexts": [bare], "candidates": []})])
    at = app(str(run_dir), "samples")
    captions = [shown(c.value) for c in at.caption]
    assert "doc_id: c1 · score: not recorded" in captions, captions
    assert not any("None" in c for c in captions)
