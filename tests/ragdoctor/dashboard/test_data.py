"""The dashboard's data layer (ragdoctor/dashboard/data.py) on hand-made and synthetic runs."""
from __future__ import annotations

import json
import time

import pandas as pd
import pytest

from corpora.jsonl import append_json_line
from corpora.records import Judgement, MetricResult
from ragdoctor.dashboard import compare_data as cd
from ragdoctor.dashboard import data as rd
from tests.ragdoctor.dashboard.runs import BLOCK_Q, SAMPLES, make_trace, synthetic_run

# --- ragdoctor.dashboard.data --------------------------------------------------------------------------------------------

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
            assert (a >= rd.verdict_cut(metric)) != (b >= rd.verdict_cut(metric)), (sid, metric)
    assert s["judges_disagree"].equals(s["disagree_on"] != "")
    assert s["judges_disagree"].any()  # the strict judge rejects claims the lenient one accepts


def test_quadrants_match_the_diagnosis_report(runs):
    run = rd.load_run(runs[0])
    points = rd.quadrant_points(run)
    quads = rd.quadrant_summary(points).set_index("quadrant")
    report = run.report["metric_disagreements"]["groundedness_x_correctness"]
    assert {q: int(quads.loc[q, "count"]) for q in quads.index} == {q: v["count"] for q, v in report.items()}
    assert {q: quads.loc[q, "why"] for q in ("unmeasured", "left_out")} == {
        q: report[q]["why"] for q in ("unmeasured", "left_out")}
    assert quads["count"].sum() == len(run.judgements)  # every judged sample counted once: a cell or a bucket
    assert "stale-block" in set(points.loc[points["quadrant"] == "grounded_wrong", "sample_id"])
    assert quads.loc["grounded_wrong", "explanation"].startswith("Grounded yet wrong")
    assert points.loc[points["sample_id"] == "broken", "quadrant"].item() == "unmeasured"  # the pipeline failed
    jittered = rd.quadrant_points(run, jitter=0.03)
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
    cmp = cd.compare_runs(a, b)
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
    same = cd.compare_runs(a, a)
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


def test_a_thousand_samples_shape_fast(tmp_path):
    path = synthetic_run(tmp_path / "big", 1000)
    t0 = time.perf_counter()
    run = rd.load_run(path)
    points = rd.quadrant_points(run, jitter=0.02)
    rd.quadrant_summary(points)
    rd.metrics_table(run), rd.category_counts(run), rd.unmeasured_table(run), rd.first_relevant_table(run.samples)
    rd.judge_agreement(run.samples, "groundedness", "embedding", "lexical")
    run.detail(run.sample_ids[500])
    shaped = time.perf_counter() - t0
    assert len(run.samples) == 1000 and len(points) > 500
    assert shaped < 10.0, f"shaping a 1,000-sample run took {shaped:.2f} s"  # a guard against quadratic blow-up, not a benchmark
    t0 = time.perf_counter()
    rd.recall_curve(run)
    cd.compare_runs(run, run)
    derived = time.perf_counter() - t0
    assert derived < 4.0, f"recall curve + comparison of 1,000 samples took {derived:.2f} s"


def test_the_new_metrics_are_in_the_metric_tables(tmp_path):
    """noise_sensitivity and context_utilisation, when a run measured them, are rows of the overview's table (after the
    default metrics, in their declared order) and columns of the samples table, like every other metric."""
    from eval.judges.lexical import LexicalScorer
    from eval.judges.scorer import ScorerJudge
    from eval.judging import evaluate

    traces = [make_trace(sid, spec) for sid, spec in SAMPLES.items()]
    evaluate(traces, metrics=["groundedness", "noise_sensitivity", "context_utilisation"],
             judges=[ScorerJudge(LexicalScorer())], run=tmp_path / "run", progress=False)
    run = rd.load_run(tmp_path / "run")
    table = rd.metrics_table(run)
    assert table["metric"].tolist() == ["groundedness", "noise_sensitivity", "context_utilisation"]
    assert table.set_index("metric").loc["noise_sensitivity", "n"] > 0
    assert {"noise_sensitivity", "context_utilisation:lexical"} <= set(run.samples.columns)
    assert list(rd.metric_columns(run.samples)) == ["groundedness", "noise_sensitivity", "context_utilisation"]


def test_damaged_or_stale_derived_files_never_hide_or_misstate_the_run(runs, tmp_path):
    """Audit, session 26: a damaged results.parquet or summary.json locked the run out (or raised in a page), and
    diagnoses from an earlier evaluation were shown as the current categories."""
    import os
    import shutil

    run_dir = shutil.copytree(runs[0], tmp_path / "run")
    good = rd.load_run(run_dir)
    assert good.diagnoses and not good.diagnoses_stale
    (run_dir / "results.parquet").write_bytes(b"not parquet")
    (run_dir / "summary.json").write_text('{"metrics": 5}')
    damaged = rd.load_run(run_dir)
    assert set(damaged.results["sample_id"]) == set(good.results["sample_id"])  # from results.jsonl
    assert damaged.summary is not None and damaged.summary["metrics"]  # recomputed from the judgements
    # a later evaluation (config.json rewritten) makes the diagnoses stale: not shown, and said
    report = json.loads((run_dir / "diagnosis.json").read_text())
    report["run_key"] = "an-earlier-one"
    (run_dir / "diagnosis.json").write_text(json.dumps(report))
    stale = rd.load_run(run_dir)
    assert stale.diagnoses_stale and not stale.diagnoses and stale.report is None
    assert stale.samples["category"].isna().all()
    report.pop("run_key")  # a report written before run keys: stale when config.json is newer than the diagnoses
    (run_dir / "diagnosis.json").write_text(json.dumps(report))
    os.utime(run_dir / "diagnoses.jsonl", ns=(1, 1))
    assert rd.load_run(run_dir).diagnoses_stale


def test_retrieval_not_recorded_is_not_retrieval_missed(tmp_path):
    t = make_trace("known", SAMPLES["ok-block"])
    unknown = make_trace("unknown", SAMPLES["ok-block"]).model_copy(update={"contexts": None, "candidates": []})
    for tr in (t, unknown):
        append_json_line(tmp_path / "traces.jsonl", tr)
    run = rd.load_run(tmp_path)
    frame = run.samples.set_index("sample_id")
    assert frame.loc["known", "retrieval_measured"] and pd.isna(frame.loc["known", "retrieval_left_out"])
    # labelled, left out with eval's reason (its first relevant rank is unknown, not "not retrieved")
    assert frame.loc["unknown", "labelled"] and not frame.loc["unknown", "retrieval_measured"]
    assert frame.loc["unknown", "retrieval_left_out"] == "unmeasured: no contexts in the input record"
    assert "not retrieved" not in set(rd.first_relevant_table(run.samples)["rank"])
    assert rd.recall_curve(run)["n_queries"].max() == 1  # the unknown one is not a recall of 0
    assert run.detail("unknown")["retrieval_known"] is False


def test_the_bare_metric_column_is_one_judges():
    # nli measured s1 only (it cannot read s2's script), lexical both: the bare column is nli's, NaN on s2, as the gate
    # reads it (falling back to lexical on s2 mixed two judges in one column)
    results = pd.DataFrame([
        {"sample_id": "s1", "metric": "groundedness", "judge": "nli", "value": 0.0, "status": "ok", "reason": None},
        {"sample_id": "s2", "metric": "groundedness", "judge": "nli", "value": None, "status": "unmeasured",
         "reason": "script"},
        {"sample_id": "s1", "metric": "groundedness", "judge": "lexical", "value": 1.0, "status": "ok", "reason": None},
        {"sample_id": "s2", "metric": "groundedness", "judge": "lexical", "value": 1.0, "status": "ok", "reason": None}])
    frame = rd.samples_frame(results, {}, {}, {}).set_index("sample_id")
    assert frame.loc["s1", "groundedness"] == 0.0 and pd.isna(frame.loc["s2", "groundedness"])
    assert frame.loc["s2", "groundedness:lexical"] == 1.0


def test_the_quadrant_leaves_out_refusals_told_by_their_text_and_incomplete_answers(tmp_path):
    # as diagnostics.disagreement does: a plain row's refusal is always "answered"; an incomplete answer is neither
    # right nor wrong (the classifier's reading), so it never lands in grounded_wrong; each is counted as left out
    M = MetricResult
    rows = {"r": ("I don't know based on the provided documents.", M.ok("answer_correctness", "lexical", 0.0)),
            "i": ("The default block size is 16 tokens.",
                  M.ok("answer_correctness", "lexical", 0.3, precision=1.0, recall=0.3)),
            "w": ("The default block size is 32 tokens.", M.ok("answer_correctness", "lexical", 0.0))}
    for sid, (answer, corr) in rows.items():
        t = make_trace(sid, SAMPLES["stale-block"]).model_copy(update={"answer": answer})
        append_json_line(tmp_path / "results.jsonl", Judgement(sample_id=sid, trace=t, results=[
            M.ok("groundedness", "lexical", 1.0), corr]))
    points = rd.quadrant_points(rd.load_run(tmp_path))
    placed = points[points["placed"]]
    assert list(placed["sample_id"]) == ["w"] and list(placed["quadrant"]) == ["grounded_wrong"]
    out = points.set_index("sample_id").loc[["r", "i"]]
    assert list(out["quadrant"]) == ["left_out", "left_out"] and list(out["why"]) == ["refusal", "partial"]


def test_dense_and_bm25_curves_read_chunk_labels_at_chunk_level():
    """Labels naming chunks (kv#1) are matched against chunks by the run's own curve (as the retrieval metrics read
    them); the per-retriever curves of a hybrid run must read them the same way, not as documents (recall 0)."""
    from corpora.records import Chunk, Trace

    def chunk(cid, rank, dense, bm25):
        return Chunk(chunk_id=cid, doc_id=cid.split("#")[0], rank=rank, score=1 / rank, text="text",
                     signals={"dense_rank": float(dense), "bm25_rank": float(bm25), "rrf_score": 0.01})

    t = Trace(sample_id="s", question="q?", relevant_doc_ids=["kv#1"], answer="a",
              contexts=[chunk("kv#0", 1, 1, 2), chunk("kv#1", 2, 2, 1)])

    class OneTrace:
        sample_ids = ["s"]

        def trace(self, sid):
            return t

    qrels, ranked, _ = rd.rankings(OneTrace())
    assert ranked["hybrid"]["s"] == ["kv#0", "kv#1"] and ranked["bm25"]["s"] == ["kv#1", "kv#0"]
    assert ranked["dense"]["s"] == ["kv#0", "kv#1"]


def test_the_recall_curve_leaves_out_contexts_without_doc_ids_as_eval_does(tmp_path):
    """Audit of the retrieval metrics: a labelled trace whose contexts carry no doc_id was a recall of 0 on the curve
    (recall@5 0.5 over a hit and it) where eval's recall@5 marks it unmeasured (1.0 over the one it can measure); it is
    left out now, counted and said."""
    from corpora.records import Chunk, Trace
    from eval.metrics import get

    hit = Trace(sample_id="hit", question="q?", answer="a", relevant_doc_ids=["kv"],
                contexts=[Chunk(chunk_id="kv#0", doc_id="kv", rank=1, text="KV.")])
    blind = Trace(sample_id="blind", question="q?", answer="a", relevant_doc_ids=["kv"],
                  contexts=[Chunk(chunk_id="c17", rank=1, text="KV.")])
    for sub in ("run", "only", "fine"):
        (tmp_path / sub).mkdir()
    for tr in (hit, blind):
        append_json_line(tmp_path / "run" / "traces.jsonl", tr)
    run = rd.load_run(tmp_path / "run")
    curve = rd.recall_curve(run).set_index("k")
    ok = [r.value for r in get("recall@5").apply(None, "labels", [hit, blind]) if r.status == "ok"]
    assert curve.loc[5, "recall"] == ok[0] == 1.0 and curve.loc[5, "n_queries"] == 1
    why = "the contexts carry no doc_id to compare with the relevant ids"
    assert rd.recall_left_out(run) == {"unmeasured": {why: ["blind"]}}
    assert (curve["n_left_out"] == 1).all() and (curve["left_out"] == f"left out: 1 unmeasured: {why}").all()
    # nothing measurable: the curve says so with no value (never a recall of 0), and why
    append_json_line(tmp_path / "only" / "traces.jsonl", blind)
    only = rd.recall_curve(rd.load_run(tmp_path / "only"))
    assert len(only) == 20 and only["recall"].isna().all() and (only["n_queries"] == 0).all()
    assert (only["left_out"] == f"left out: 1 unmeasured: {why}").all()
    # a run with no left-out sample: empty columns, the curve as before
    fine = tmp_path / "fine"
    append_json_line(fine / "traces.jsonl", hit)
    assert rd.recall_curve(rd.load_run(fine))["left_out"].eq("").all()


def left_out_traces() -> list:
    """One labelled trace of each kind eval's retrieval metrics measure or leave out, and an unlabelled one."""
    from corpora.records import Chunk, Trace

    def chunk(doc, rank=1, doc_id=True):
        return Chunk(chunk_id=f"{doc}#0", doc_id=doc if doc_id else None, rank=rank, text="KV.")

    q = {"question": "q?", "answer": "a"}
    return [Trace(sample_id="hit", relevant_doc_ids=["kv"], contexts=[chunk("x"), chunk("kv", 2)], **q),
            Trace(sample_id="miss", relevant_doc_ids=["kv"], contexts=[chunk("x")], **q),
            # contexts without doc ids: which documents were found is unknown (unmeasured)
            Trace(sample_id="blind", relevant_doc_ids=["kv"], contexts=[chunk("c17", doc_id=False)], **q),
            # stopped by a guardrail before retrieval: nothing was meant to be retrieved (not applicable)
            Trace(sample_id="blocked", relevant_doc_ids=["kv"], contexts=None, outcome="blocked", **q),
            # the record does not say what was retrieved (unmeasured, with the importer's reason)
            Trace(sample_id="unknown", relevant_doc_ids=["kv"], contexts=None,
                  metadata={"contexts_missing": "the span dropped its documents"}, **q),
            # labels only in metadata.qrels, every one graded 0 (not applicable)
            Trace(sample_id="zero", metadata={"qrels": {"kv": 0}}, contexts=[chunk("kv")], **q),
            Trace(sample_id="plain", contexts=[chunk("kv")], **q)]


LEFT_OUT = {"blind": "unmeasured: the contexts carry no doc_id to compare with the relevant ids",
            "blocked": "not applicable: question was blocked by a guardrail before retrieval",
            "unknown": "unmeasured: no contexts in the input record: the span dropped its documents",
            "zero": "not applicable: no relevant document among the labels (every grade is 0 or below)"}


def test_first_relevant_ranks_leave_out_what_eval_leaves_out_never_not_retrieved(tmp_path):
    """Audit of the rank-of-first-relevant chart: a labelled trace whose contexts carry no doc_id was counted "not
    retrieved" (a silent miss where eval's recall says unmeasured); one blocked before retrieval was called unrecorded
    where eval says not applicable; labels given only as qrels were not counted at all. Each is left out now, with
    eval's status and reason, as the recall curve leaves it out."""
    from eval.metrics import get

    traces = left_out_traces()
    for t in traces:
        append_json_line(tmp_path / "traces.jsonl", t)
    run = rd.load_run(tmp_path)
    s = run.samples.set_index("sample_id")
    assert s["labelled"].to_dict() == {t.sample_id: t.sample_id != "plain" for t in traces}
    assert set(s.index[s["retrieval_measured"]]) == {"hit", "miss"}
    assert s["retrieval_left_out"].dropna().to_dict() == LEFT_OUT
    assert s.loc["hit", "first_relevant_rank"] == 2 and pd.isna(s.loc["miss", "first_relevant_rank"])
    # the same rule as eval's recall@5, and as the recall curve's
    verdicts = dict(zip([t.sample_id for t in traces], get("recall@5").apply(None, "labels", traces)))
    assert {sid for sid, r in verdicts.items() if r.status == "ok"} == {"hit", "miss"}
    assert {sid: r.status for sid, r in verdicts.items() if sid in LEFT_OUT} == {
        sid: why.split(":")[0].replace(" ", "_") for sid, why in LEFT_OUT.items()}
    curve = rd.recall_curve(run)
    assert (curve["n_queries"] == s["retrieval_measured"].sum()).all()
    assert (curve["n_left_out"] == len(LEFT_OUT)).all()
    assert {sid for reasons in rd.recall_left_out(run).values() for ids in reasons.values() for sid in ids} == set(
        LEFT_OUT)
    first = rd.first_relevant_table(run.samples)
    assert first.loc[first["bucket"] != "left out", ["rank", "count"]].values.tolist() == [["2", 1],
                                                                                           ["not retrieved", 1]]
    out = first[first["bucket"] == "left out"]
    assert (out["rank"] == "left out").all() and dict(zip(out["why"], out["count"])) == {
        why: 1 for why in LEFT_OUT.values()}
    assert first["count"].sum() == s["labelled"].sum()  # every labelled question in one bucket, once
    # contexts null: unmeasured, with the record's reason; blocked: eval calls that not applicable, not unmeasured
    assert rd.recall_left_out(run)["unmeasured"]["no contexts in the input record: the span dropped its documents"] == [
        "unknown"]


def test_the_drilldown_leaves_out_what_eval_leaves_out_never_not_retrieved(tmp_path):
    """Audit of the sample drill-down: a labelled trace whose contexts carry no doc_id had each relevant document
    marked "not retrieved" (chunk ids never match a document id) and its chunks "not a relevant document", where eval's
    retrieval metrics call it unmeasured. The drill-down follows eval's rule now: left out, with the reason, and no
    per-document or per-chunk verdict; a measured miss is still a miss."""
    for t in left_out_traces():
        append_json_line(tmp_path / "traces.jsonl", t)
    run = rd.load_run(tmp_path)
    for sid, why in LEFT_OUT.items():
        d = run.detail(sid)
        assert d["retrieval_left_out"] == why, sid
        assert all(rank is None for rank in d["relevant_found"].values()), sid
        assert all(c["relevant"] is None for c in d["chunks"]), sid
    blind = run.detail("blind")
    assert blind["relevant_found"] == {"kv": None} and [c["chunk_id"] for c in blind["chunks"]] == ["c17#0"]
    # measured: a rank where found, None ("not retrieved") where not, and each chunk relevant or not
    hit, miss = run.detail("hit"), run.detail("miss")
    assert hit["retrieval_left_out"] is None and hit["relevant_found"] == {"kv": 2}
    assert [c["relevant"] for c in hit["chunks"]] == [False, True]
    assert miss["retrieval_left_out"] is None and miss["relevant_found"] == {"kv": None}
    assert run.detail("plain")["retrieval_left_out"] is None  # unlabelled: nothing to leave out


def eval_labelled_traces() -> list:
    """Traces labelled the other ways eval's retrieval metrics read labels: graded qrels alone (a grade-0 document
    retrieved first, a relevant one ranked past the cut), a label naming a chunk, and a chunk label whose document is
    graded 0 (a grade-0 label never sets the level: METRICS_VERSION 20)."""
    from corpora.records import Candidate, Chunk, Trace

    def chunk(cid, rank):
        return Chunk(chunk_id=cid, doc_id=cid.split("#")[0], rank=rank, text="KV.")

    q = {"question": "q?", "answer": "a"}
    guide = [chunk("guide#0", 1), chunk("guide#2", 2)]
    return [Trace(sample_id="qrels", metadata={"qrels": {"kv": 2, "lora": 1, "noise": 0}}, **q,
                  contexts=[chunk("noise#0", 1), chunk("kv#0", 2)],
                  candidates=[Candidate(chunk_id="lora#3", doc_id="lora", rank=5)]),
            Trace(sample_id="chunk", relevant_doc_ids=["guide#2"], contexts=guide, **q),
            Trace(sample_id="chunk0", metadata={"qrels": {"guide#2": 1, "guide": 0}}, contexts=guide, **q)]


def agrees_with_eval(t, d) -> None:
    """The drill-down's labels and found ranks are eval's: its relevant ids, its level, its relevant chunk ranks."""
    from eval.metrics import get
    from eval.metrics.retrieval import ranking, relevant_ranks

    r = get("recall@10").apply(None, "labels", [t])[0]
    assert r.status == "ok" and d["relevant_doc_ids"] == r.evidence["relevant"]
    assert d["relevance_level"] == r.evidence.get("level", "document") == ranking(t)[1]
    found = {label for label, rank in d["relevant_found"].items() if rank is not None}
    assert found == set(r.evidence["relevant"]) & set(ranking(t)[0]) and len(found) / len(found | set(
        d["relevant_found"])) == r.value
    assert sorted(c["rank"] for c in d["chunks"] if c["relevant"]) == sorted(sum(relevant_ranks(t), []))


def test_the_drilldown_shows_labels_given_only_as_qrels_with_their_grades():
    """The drill-down read relevant_doc_ids only: a trace labelled by metadata.qrels alone (a copy made in memory,
    which no validator fills relevant_doc_ids for) showed "no relevance labels" while eval measured its recall; and no
    grade was shown. It reads the labels as eval does now: the documents graded above 0, each with its grade, found
    at the rank eval found it (lora past the cut, at rank 5); the grade-0 document is judged not relevant, never
    listed as relevant."""
    t = eval_labelled_traces()[0]
    for trace in (t, t.model_copy(update={"relevant_doc_ids": None})):
        d = rd.sample_detail(None, trace, None)
        assert d["relevant_doc_ids"] == ["kv", "lora"] and d["relevance_grades"] == {"kv": 2, "lora": 1}
        assert d["relevant_found"] == {"kv": 2, "lora": 5} and d["not_relevant"] == ["noise"]
        assert [c["relevant"] for c in d["chunks"]] == [False, True, True] and d["retrieval_left_out"] is None
        agrees_with_eval(trace, d)
    # labels without grades show none
    assert rd.sample_detail(None, eval_labelled_traces()[1], None)["relevance_grades"] is None


def test_the_drilldown_matches_chunk_labels_per_chunk_as_eval_does():
    """A label naming a chunk (guide#2) is matched chunk by chunk by eval (found at rank 2: recall 1); the drill-down
    compared it with each chunk's document id and called it "not retrieved", and no chunk relevant."""
    t = eval_labelled_traces()[1]
    d = rd.sample_detail(None, t, None)
    assert d["relevance_level"] == "chunk" and d["relevant_found"] == {"guide#2": 2}
    assert [(c["chunk_id"], c["relevant"]) for c in d["chunks"]] == [("guide#0", False), ("guide#2", True)]
    agrees_with_eval(t, d)


def test_grade_0_labels_are_never_relevant_and_never_set_the_level():
    """qrels {guide#2: 1, guide: 0}: eval matches per chunk (the grade-0 document does not turn the ranking to
    documents) and finds guide#2 at rank 2; the grade-0 document is judged not relevant, listed apart, and its other
    chunk is no relevant chunk."""
    t = eval_labelled_traces()[2]
    d = rd.sample_detail(None, t, None)
    assert d["relevant_doc_ids"] == ["guide#2"] and "guide" not in d["relevant_found"]
    assert d["not_relevant"] == ["guide"] and d["relevance_level"] == "chunk"
    assert d["relevant_found"] == {"guide#2": 2} and [c["relevant"] for c in d["chunks"]] == [False, True]
    agrees_with_eval(t, d)
