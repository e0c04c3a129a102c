"""The dashboard: diagnostics.run_data on hand-made and synthetic runs, and every page of app.py through streamlit's
AppTest on a small fixture run made by the project's own code (lexical + labels judges: no model)."""
from __future__ import annotations

import json
import random
import time
from pathlib import Path

import pandas as pd
import pytest

from corpora.jsonl import append_json_line
from diagnostics import run_data as rd
from diagnostics.report import diagnose, write_diagnosis
from eval.dataset import from_trace
from eval.judges.labels import LabelsJudge
from eval.judges.lexical import LexicalScorer
from eval.metrics import LLM_METRICS, ScorerJudge
from eval.records import Judgement, MetricResult
from eval.runner import evaluate, write_outputs
from rag.trace import RetrievedChunk, Trace
from ragdoctor.run_report import summarize_traces

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"

DOCS = {
    "cur": "Updated 2025: the default block size is 16 tokens. Blocks live in GPU memory.",
    "old": "Note 2023: the default block size is 32 tokens.",
    "lora": "LoRA adds low-rank adapters to frozen weights. The rank r is often 8.",
    "ring": "Ring all-reduce sends about twice the gradient size per GPU, whatever the number of GPUs.",
    "noise": "Unrelated text about tokenizers and byte pair encoding merges.",
}
BLOCK_Q = "What is the default block size?"
# id: (question, reference, relevant docs, retrieved docs, candidate docs past the cut, answer, outcome)
SAMPLES = {
    "ok-block": (BLOCK_Q, "The default block size is 16 tokens.", ["cur"], ["cur", "noise"], [],
                 "The default block size is 16 tokens [cur#0].", "answered"),
    "stale-block": (BLOCK_Q, "It is 16 tokens per block.", ["cur"], ["old", "cur"], [],
                    "The default block size is 32 tokens [old#0].", "answered"),
    "miss-lora": ("What rank do LoRA adapters use?", "The rank r is often 8.", ["lora"], ["noise", "ring"], ["old"],
                  "The rank is 64 for every adapter, and adapters replace the weights.", "answered"),
    "cut-ring": ("How much does ring all-reduce send per GPU?", "About twice the gradient size per GPU.", ["ring"],
                 ["noise", "old"], ["cur", "ring"], "I don't know based on the provided documents.", "answered"),
    "unanswerable": ("Who invented the block allocator?", "The provided documents do not contain the answer.", [],
                     ["cur"], [], "The block allocator was invented by Ada Lovelace.", "answered"),
    "broken": ("What rank do LoRA adapters use?", "The rank r is often 8.", ["lora"], ["lora"], [], "", "error"),
    "ok-lora": ("What do LoRA adapters add?", "LoRA adds low-rank adapters to frozen weights.", ["lora"],
                ["lora", "noise"], [], "LoRA adds low-rank adapters to frozen weights [lora#0].", "answered"),
}
# run B: the same questions, one answer got worse (a regression) and one better (a fix)
CHANGES_B = {"ok-block": "The default block size is 64 tokens and blocks live on disk.",
             "miss-lora": "LoRA adapters use rank 8 most often."}


def strict_lexical() -> ScorerJudge:
    """A second judge: the lexical scorer with a stricter support threshold, so the two can disagree."""
    scorer = LexicalScorer(support_threshold=0.95)
    scorer.name = "strict"
    return ScorerJudge(scorer)


def make_trace(sid: str, spec: tuple, answer: str | None = None) -> Trace:
    question, reference, relevant, retrieved, candidates, text, outcome = spec
    ctx = [RetrievedChunk(chunk_id=f"{d}#0", doc_id=d, rank=r, score=1 / r, text=DOCS[d], title=d.upper(),
                          signals={"dense_rank": float(r), "bm25_rank": float(len(retrieved) - r + 1),
                                   "rrf_score": 1 / (60 + r)})
           for r, d in enumerate(retrieved, 1)]
    cands = [{"chunk_id": f"{d}#0", "doc_id": d, "rank": len(retrieved) + 4 + i, "score": 0.001}
             for i, d in enumerate(candidates)]
    return Trace(sample_id=sid, question=question, reference=reference, relevant_doc_ids=relevant, contexts=ctx,
                 candidates=cands, answer=answer if answer is not None else text, outcome=outcome,
                 error="TimeoutError: the model did not answer" if outcome == "error" else None,
                 latency_ms={"retrieve": 12.0, "generate": 80.0, "total": 92.0})


def make_run(run_dir: Path, answers: dict[str, str] | None = None) -> Path:
    """A run folder as `ragdoctor run` + `eval` + `diagnose` write it, made with the project's own code."""
    run_dir.mkdir(parents=True, exist_ok=True)
    traces = [make_trace(sid, spec, (answers or {}).get(sid)) for sid, spec in SAMPLES.items()]
    for t in traces:
        append_json_line(run_dir / "traces.jsonl", t)
    (run_dir / "run_summary.json").write_text(json.dumps(summarize_traces(traces)), encoding="utf-8")
    ev = evaluate([from_trace(t) for t in traces], metrics=[*LLM_METRICS, "recall@5", "mrr@10"],
                  judges=[ScorerJudge(LexicalScorer()), strict_lexical(), LabelsJudge()], run_dir=run_dir,
                  progress=False)
    write_diagnosis(run_dir, *diagnose(ev.judgements))
    return run_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("dashboard")
    return make_run(base / "run-a"), make_run(base / "run-b", CHANGES_B)


def synthetic_run(run_dir: Path, n: int, seed: int = 0) -> Path:
    """A run of ``n`` samples with two judges, claims, chunk verdicts, unmeasured results and 20 ranked chunks each:
    the shape (not the meaning) of a large real run, written without any judge."""
    rng = random.Random(seed)
    run_dir.mkdir(parents=True, exist_ok=True)
    judgements = []
    with open(run_dir / "traces.jsonl", "w", encoding="utf-8") as fh:
        for i in range(n):
            rel = [f"d{i % 50}"] if i % 10 else []
            ctx = [RetrievedChunk(chunk_id=f"d{(i + r * 7) % 50}#0", doc_id=f"d{(i + r * 7) % 50}", rank=r + 1,
                                  score=1 / (r + 1), text=f"Chunk {r} of sample {i}. " * 12,
                                  signals={"dense_rank": float(r + 1), "bm25_rank": float(5 - r), "rrf_score": 0.03})
                   for r in range(5)]
            cands = [{"chunk_id": f"d{(i + r) % 50}#1", "doc_id": f"d{(i + r) % 50}", "rank": r + 1, "score": 0.01}
                     for r in range(5, 20)]
            t = Trace(sample_id=f"s{i:05d}", question=f"Question {i} about topic {i % 50}?", reference=f"Answer {i}.",
                      relevant_doc_ids=rel, contexts=ctx, candidates=cands, answer=f"Claim one of {i}. Claim two of {i}.",
                      latency_ms={"retrieve": 5.0, "generate": 50.0, "total": 55.0})
            fh.write(t.model_dump_json() + "\n")
            results = []
            for judge in ("lexical", "embedding"):
                for m in LLM_METRICS:
                    if rng.random() < 0.03:
                        results.append(MetricResult.unmeasured(m, judge, "judge failed: TimeoutError"))
                        continue
                    v = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0])
                    ev = {}
                    if m == "groundedness":
                        ev["claims"] = [{"claim": f"Claim {w} of {i}.", "verdict": rng.choice(["supported", "unsupported"]),
                                         "score": rng.random(), "chunk_id": ctx[0].chunk_id, "sentence": "Chunk 0."}
                                        for w in ("one", "two")]
                    elif m == "context_precision":
                        ev["chunks"] = [{"chunk_id": c.chunk_id, "relevant": rng.random() < .5, "score": .5} for c in ctx]
                    elif m == "answer_correctness":
                        ev.update(precision=v, recall=v)
                    results.append(MetricResult.ok(m, judge, v, **ev))
            results.append(MetricResult.ok("recall@5", "labels", rng.choice([0.0, 1.0])) if rel else
                           MetricResult.not_applicable("recall@5", "labels", "no relevant documents (unanswerable)"))
            judgements.append(Judgement(sample_id=t.sample_id, results=results, sample=from_trace(t), eval_hash="x"))
    with open(run_dir / "results.jsonl", "w", encoding="utf-8") as fh:
        for j in judgements:
            fh.write(j.model_dump_json() + "\n")
    write_outputs(run_dir, judgements, [])
    write_diagnosis(run_dir, *diagnose(judgements))
    return run_dir


# --- diagnostics.run_data --------------------------------------------------------------------------------------------

def test_load_run_shapes_the_wide_table(runs):
    run = rd.load_run(runs[0])
    s = run.samples.set_index("sample_id")
    assert list(s.index) == list(SAMPLES)
    assert s.loc["ok-block", "category"] == "ok" and s.loc["stale-block", "category"] == "grounded_yet_hallucinated"
    assert s.loc["cut-ring", "category"] == "ranked_out" and s.loc["unanswerable", "category"] == "missed_refusal"
    assert s.loc["broken", "category"] == "unmeasured" and s.loc["broken", "n_unmeasured"] > 0
    # per-judge columns and the preferred judge's value (lexical before strict: unknown judges sort by name)
    assert {"groundedness:lexical", "groundedness:strict", "recall@5:labels"} <= set(s.columns)
    assert s.loc["stale-block", "groundedness"] == s.loc["stale-block", "groundedness:lexical"] == 1.0
    # first relevant chunk: rank 2 for stale-block, past the cut for cut-ring, never for miss-lora, none if unlabelled
    assert s.loc["stale-block", "first_relevant_rank"] == 2
    assert s.loc["cut-ring", "first_relevant_rank"] == 7
    assert pd.isna(s.loc["miss-lora", "first_relevant_rank"]) and not s.loc["unanswerable", "labelled"]
    assert s.loc["ok-block", "latency_ms"] == 92.0


def test_judge_disagreement_flag_uses_the_metric_cuts(runs):
    s = rd.load_run(runs[0]).samples.set_index("sample_id")
    for sid, row in s.iterrows():
        for metric in row["disagree_on"].split(", ") if row["disagree_on"] else []:
            a, b = row[f"{metric}:lexical"], row[f"{metric}:strict"]
            assert (a >= rd.CUTS[metric]) != (b >= rd.CUTS[metric]), (sid, metric)
    assert s["judges_disagree"].equals(s["disagree_on"] != "")
    assert s["judges_disagree"].any()  # the strict judge rejects claims the lenient one accepts


def test_quadrants_match_the_diagnosis_report(runs):
    run = rd.load_run(runs[0])
    points = rd.quadrant_points(run.samples)
    quads = rd.quadrant_summary(points).set_index("quadrant")
    report = run.report["metric_disagreements"]["groundedness_x_correctness"]
    assert {q: int(quads.loc[q, "count"]) for q in quads.index} == {q: v["count"] for q, v in report.items()}
    assert "stale-block" in set(points.loc[points["quadrant"] == "grounded_wrong", "sample_id"])
    assert quads.loc["grounded_wrong", "explanation"].startswith("Grounded yet wrong")
    jittered = rd.quadrant_points(run.samples, jitter=0.03)
    assert (jittered["x_plot"] - jittered["x"]).abs().max() <= 0.03 and jittered["x"].equals(points["x"])


def test_sample_detail_marks_claims_and_chunks(runs):
    d = rd.load_run(runs[0]).detail("stale-block")
    assert d["question"] == BLOCK_Q and d["relevant_doc_ids"] == ["cur"] and d["relevant_found"] == {"cur": 2}
    assert d["diagnosis"]["category"] == "grounded_yet_hallucinated" and "correctness" in d["diagnosis"]["rule"]
    assert [c["rank"] for c in d["chunks"]] == [1, 2] and d["chunks"][0]["relevant"] is False
    old = d["chunks"][0]
    assert old["chunk_id"] == "old#0" and any(m["verdict"] == "supported" and m["claim"] == 1 for m in old["marks"])
    tagged = [s for s in d["segments"] if s["claim"]]
    assert tagged and tagged[0]["verdict"] == "supported" and "32 tokens" in tagged[0]["text"]
    assert "".join(s["text"] for s in d["segments"]) == d["answer"]
    assert d["latency_ms"]["total"] == 92.0 and set(d["metrics"]["judge"]) == {"lexical", "strict", "labels"}
    cut = rd.load_run(runs[0]).detail("cut-ring")
    assert [c["in_context"] for c in cut["chunks"]] == [True, True, False, False]


def test_highlight_finds_claims_across_citations_and_clause_joints():
    answer = "Blocks are 16 tokens [cur#0]; they live in GPU memory, but the allocator\nfrees them lazily."
    claims = [{"claim": "Blocks are 16 tokens.", "verdict": "supported"},
              {"claim": "they live in GPU memory.", "verdict": "unsupported"},
              {"claim": "the allocator frees them lazily.", "verdict": "contradicted"},
              {"claim": "A claim that is not in the answer.", "verdict": "supported"}]
    segs = rd.highlight_segments(answer, claims)
    assert "".join(s["text"] for s in segs) == answer
    assert [(s["claim"], s["verdict"]) for s in segs if s["claim"]] == [(1, "supported"), (2, "unsupported"),
                                                                        (3, "contradicted")]


def test_recall_curve_and_first_relevant_ranks(runs):
    run = rd.load_run(runs[0])
    curve = rd.recall_curve(run)
    hybrid = curve[curve["ranking"] == "hybrid"].set_index("k")["recall"]
    assert list(hybrid.index) == list(range(1, 21)) and hybrid.is_monotonic_increasing
    labelled = [sid for sid, spec in SAMPLES.items() if spec[2]]
    assert curve["n_queries"].max() == len(labelled)
    # recall@1 by hand: the first document is relevant for ok-block, broken and ok-lora
    assert hybrid[1] == pytest.approx(3 / len(labelled))
    assert hybrid[20] == pytest.approx(5 / len(labelled))  # all but miss-lora are found within 20
    assert {"dense", "bm25"} <= set(curve["ranking"]) and (curve.loc[curve["ranking"] == "dense", "note"] != "").all()
    first = rd.first_relevant_table(run.samples).set_index("rank")["count"]
    assert first["1"] == 3 and first["2"] == 1 and first["7"] == 1 and first["not retrieved"] == 1


def test_compare_runs_puts_regressions_first(runs):
    a, b = rd.load_run(runs[0]), rd.load_run(runs[1])
    cmp = rd.compare_runs(a, b)
    m = cmp["metrics"]
    assert {"metric", "judge", "mean_a", "ci_low_a", "mean_b", "delta", "delta_ci_low", "delta_ci_high",
            "change"} <= set(m.columns)
    order = {"regression": 0, "within noise": 1, "improvement": 2, "only in A": 3, "only in B": 4}
    assert m["change"].map(order).is_monotonic_increasing
    row = m[(m["metric"] == "groundedness") & (m["judge"] == "lexical")].iloc[0]
    assert row["delta"] == pytest.approx(row["mean_b"] - row["mean_a"]) and row["n_paired"] >= 2
    assert row["delta_ci_low"] <= row["delta"] <= row["delta_ci_high"]
    ch = cmp["changed"].set_index("sample_id")
    assert ch.loc["ok-block", "change"] == "regression" and ch.loc["ok-block", "category_a"] == "ok"
    assert cmp["changed"]["sample_id"].iloc[0] == "ok-block"  # regressions first
    assert cmp["common"] == len(SAMPLES) and not cmp["only_a"] and not cmp["only_b"]
    same = rd.compare_runs(a, a)
    assert not len(same["changed"]) and (same["metrics"]["change"] == "within noise").all()


def test_overview_tables_and_gate(runs):
    from eval.gate import GateConfig

    run = rd.load_run(runs[0])
    table = rd.metrics_table(run)
    assert table["metric"].iloc[0] == "groundedness" and table[["ci_low", "ci_high"]].notna().all().all()
    gate = rd.gate_table(run, GateConfig(minimums={"groundedness": 0.99, "recall@5:labels": 0.1}, max_unmeasured=0.5))
    by = gate.set_index("check")
    assert not by.loc["groundedness", "passed"] and by.loc["groundedness", "judge"] == "lexical"
    assert by.loc["recall@5:labels", "passed"] and pd.isna(by.loc["unmeasured share", "metric"])
    marked = rd.with_gate(table, gate).set_index(["metric", "judge"])["gate"]
    assert marked[("groundedness", "lexical")] == "FAIL" and marked[("groundedness", "strict")] == ""
    assert rd.gate_table(run, GateConfig()).empty
    cats = rd.category_counts(run)
    assert cats["count"].sum() == len(SAMPLES) and cats["definition"].str.len().gt(0).all()
    un = rd.unmeasured_table(run)
    assert un["count"].sum() == int((run.results["status"] == "unmeasured").sum()) > 0
    assert un["reason"].str.contains("pipeline error").any()


def test_find_runs_and_stamp(runs, tmp_path):
    parent = runs[0].parent
    assert set(rd.find_runs([parent])) == set(runs) and rd.find_runs([runs[0]]) == [runs[0]]
    assert rd.find_runs([tmp_path, ""]) == []
    stamp = rd.run_stamp(runs[0])
    assert {"traces.jsonl", "results.jsonl", "summary.json", "diagnoses.jsonl"} <= {f for f, *_ in stamp}
    with pytest.raises(FileNotFoundError):
        rd.load_run(tmp_path)


def test_a_traces_only_run_loads(tmp_path):
    t = make_trace("only", SAMPLES["ok-block"])
    append_json_line(tmp_path / "traces.jsonl", t)
    run = rd.load_run(tmp_path)
    assert run.sample_ids == ["only"] and run.summary is None and rd.metrics_table(run).empty
    assert run.detail("only")["chunks"][0]["chunk_id"] == "cur#0"
    assert rd.recall_curve(run)["recall"].max() == 1.0


def test_lazy_records_keep_the_later_record_and_survive_a_torn_tail(tmp_path):
    log = tmp_path / "results.jsonl"
    log.write_text('{"sample_id": "a", "v": 1}\n{"v": 2, "sample_id": "b"}\n{"sample_id":"a","v":3}\n'
                   '{"sample_id": "c\\"q", "v": 4}\n{"sample_id": "a", "v": 5, "torn', encoding="utf-8")
    recs = rd.LazyRecords(log)
    assert list(recs) == ["a", "b", 'c"q'] and len(recs) == 3
    assert recs["a"]["v"] == 3 and recs["b"]["v"] == 2 and recs['c"q']["v"] == 4
    assert recs.get("missing") is None and not rd.LazyRecords(tmp_path / "absent.jsonl")


def test_a_log_newer_than_its_parquet_wins(runs, tmp_path):
    import shutil

    run_dir = shutil.copytree(runs[0], tmp_path / "run")
    config = json.loads((run_dir / "config.json").read_text())
    config["samples"]["late"] = "h-late"  # an eval (killed before its parquet) whose input had one more sample
    (run_dir / "config.json").write_text(json.dumps(config))
    extra = Judgement(sample_id="late", eval_hash=config["eval_hash"], sample_hash="h-late",
                      results=[MetricResult.ok("groundedness", "lexical", 0.25)])
    stale = extra.model_copy(update={"sample_id": "gone", "sample_hash": "h-gone"})  # not in the run's input now
    time.sleep(0.01)
    append_json_line(run_dir / "results.jsonl", extra)  # judged after results.parquet was written (a killed eval)
    append_json_line(run_dir / "results.jsonl", stale)
    run = rd.load_run(run_dir)
    assert "late" in set(run.results["sample_id"]) and "late" in run.sample_ids
    assert run.samples.set_index("sample_id").loc["late", "groundedness"] == 0.25
    assert "gone" not in run.sample_ids and "gone" not in set(run.results["sample_id"])


def test_dashboard_command(runs, tmp_path, monkeypatch):
    import argparse

    from corpora.errors import InputError
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


def test_a_thousand_samples_shape_fast(tmp_path):
    path = synthetic_run(tmp_path / "big", 1000)
    t0 = time.perf_counter()
    run = rd.load_run(path)
    points = rd.quadrant_points(run.samples, jitter=0.02)
    rd.quadrant_summary(points)
    rd.metrics_table(run), rd.category_counts(run), rd.unmeasured_table(run), rd.first_relevant_table(run.samples)
    rd.judge_agreement(run.samples, "groundedness", "embedding", "lexical")
    run.detail(run.sample_ids[500])
    shaped = time.perf_counter() - t0
    assert len(run.samples) == 1000 and len(points) > 500
    assert shaped < 2.0, f"shaping a 1,000-sample run took {shaped:.2f} s"
    t0 = time.perf_counter()
    rd.recall_curve(run)
    rd.compare_runs(run, run)
    derived = time.perf_counter() - t0
    assert derived < 4.0, f"recall curve + comparison of 1,000 samples took {derived:.2f} s"


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


def texts(at) -> str:
    return "\n".join([*(m.value for m in at.markdown), *(c.value for c in at.caption), *(s.value for s in at.subheader),
                      *(t.value for t in at.title), *(h.value for h in at.header), *(e.value for e in at.error),
                      *(w.value for w in at.warning), *(i.value for i in at.info), *(s.value for s in at.success)])


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
    at.text_input(key="gate_pyproject").set_value("no-such-pyproject.toml").run()
    assert "No thresholds configured" in texts(at)
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
    labels = [e.label for e in at.expander]
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
