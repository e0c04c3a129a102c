"""The dashboard's data: a run folder as the frames its pages show, one section per page (overview, samples,
disagreements, retrieval, labels; comparing two runs is compare_data.py). Pure pandas over the typed records
(corpora/records.py) read through the run folder (corpora/run_folder.py): no streamlit, no models.

A run holds what its commands wrote (``run``: traces; ``eval``: judgements, summary; ``diagnose``: diagnoses), and
every view shows what the run has. Nothing here computes a metric: values come from the judgements, categories from
the diagnoses, retrieval metrics from ``eval.retrieval_metrics`` (pytrec_eval), confidence intervals from
``summary.json``; metric cuts and judge preference from their declarations. Frames
are built column-wise so a run of thousands of samples shapes in well under a second."""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from corpora.errors import InputError
from corpora.labels import read_labels
from corpora.records import Candidate, Chunk, Diagnosis, Judgement, MetricResult, Trace, relevant_docs
from corpora.run_folder import DIAGNOSIS, LABELS, RESULTS, RESULTS_TABLE, RUN_SUMMARY, SUMMARY, RunFolder
from diagnostics.disagreement import (
    BUCKETS,
    EXPLANATIONS,
    VIEWS,
    View,
    judge_disagreements,
    placements,
)
from diagnostics.taxonomy import DEFINITIONS
from eval.answerability import refused
from eval.calibration import calibrate, calibration_note
from eval.gate import GateConfig, check, primary
from eval.judges.registry import trust_rank
from eval.metrics import find
from eval.metrics.retrieval import ranking, relevant_ranks
from eval.retrieval_metrics import mean_metrics, retrieval_metrics
from eval.summary import RESULT_COLUMNS, results_frame, summarize
from ragdoctor.run_report import retrieval_left_out

QUADRANT_VIEWS: dict[tuple[str, str], View] = {(v.x, v.y): v for v in VIEWS}
is_run_dir = RunFolder.is_run
find_runs = RunFolder.find


def metric_rank(name: str) -> tuple[int, str]:
    """Where a metric sits in the tables: its declared display position, then its name."""
    m = find(name)
    return (m.display if m else 99), name


def verdict_cut(metric: str) -> float:
    """The value at or above which a metric reads as "yes" (its declaration's verdict cut)."""
    m = find(metric)
    return m.cut if m else 0.5


def run_stamp(run_dir: str | Path) -> tuple[tuple[str, int, int], ...]:
    """A cache key that changes whenever the run does (RunFolder.stamp), except for its labels: a label written on the
    Label page must not reload the whole run (what the labels change is keyed on labels_stamp)."""
    return tuple(s for s in RunFolder(run_dir).stamp() if s[0] != LABELS)


def labels_stamp(run_dir: str | Path) -> tuple[tuple[str, int, int], ...]:
    """A cache key that changes whenever the run's labels.jsonl does."""
    return tuple(s for s in RunFolder(run_dir).stamp() if s[0] == LABELS)


# --- loading a run -----------------------------------------------------------------------------------------------

@dataclass
class Run:
    """A loaded run. Judgements are validated one by one when asked for (``judgements`` is a LogIndex), which keeps a
    run of thousands of samples quick to open; the traces of traces.jsonl, or else the judged traces, say what each
    sample is."""

    folder: RunFolder
    judgements: Mapping[str, Judgement]
    traces: dict[str, Trace]
    diagnoses: dict[str, Diagnosis]
    results: pd.DataFrame  # long: sample_id, metric, judge, value, status, reason, seconds
    samples: pd.DataFrame  # wide: one row per sample (see samples_frame)
    summary: dict | None = None  # summary.json (eval), or recomputed when it is not the current one
    summary_file: bool = False  # ``summary`` is the run's current summary.json (what `ragdoctor gate` reads)
    report: dict | None = None  # diagnosis.json
    run_summary: dict | None = None  # run_summary.json (pipeline)
    config: dict | None = None
    input_errors: list[str] = field(default_factory=list)
    diagnoses_stale: bool = False  # diagnoses.jsonl is from an earlier evaluation (or damaged): not shown

    @property
    def path(self) -> Path:
        return self.folder.path

    @property
    def name(self) -> str:
        return self.folder.name

    @property
    def sample_ids(self) -> list[str]:
        return self.samples["sample_id"].tolist()

    def judgement(self, sample_id: str) -> Judgement | None:
        return self.judgements.get(sample_id)

    def trace(self, sample_id: str) -> Trace | None:
        return trace_of(sample_id, self.traces, self.judgements)

    def diagnosis(self, sample_id: str) -> Diagnosis | None:
        return self.diagnoses.get(sample_id)

    def all_judgements(self) -> list[Judgement]:
        return list(self.judgements.values())

    def detail(self, sample_id: str) -> dict:
        return sample_detail(self.judgement(sample_id), self.trace(sample_id), self.diagnosis(sample_id),
                             sample_id=sample_id)


def trace_of(sample_id: str, traces: Mapping[str, Trace], judgements: Mapping[str, Judgement]) -> Trace | None:
    """The sample's trace: the traces log's, else the one its judgement judged (records that came from elsewhere)."""
    if sample_id in traces:
        return traces[sample_id]
    j = judgements.get(sample_id)
    return j.trace if j is not None else None


def load_run(run_dir: str | Path) -> Run:
    """Everything a run folder holds. Raises FileNotFoundError when the folder is not a run."""
    folder = RunFolder(run_dir)
    if not folder.is_run(folder.path):
        raise FileNotFoundError(f"{folder.path}: not a run folder (no results.jsonl, results.parquet or traces.jsonl)")
    judgements = folder.judgements_by_id()
    traces = folder.latest_traces()
    stale = folder.stale_diagnoses()  # categories of an earlier evaluation are not shown as the current ones
    try:
        diagnoses = {} if stale else folder.diagnoses()
    except InputError:  # a damaged diagnoses file: the run without categories (rerun diagnose), not no run at all
        diagnoses, stale = {}, True
    summary = folder.summary()
    summary_file = summary is not None
    parquet, log = folder.file(RESULTS_TABLE), folder.file(RESULTS)
    fresh = summary is not None or folder.read_json(SUMMARY) is None  # not left by an earlier evaluation
    results = None
    if fresh and parquet.exists() and (not log.exists() or parquet.stat().st_mtime_ns >= log.stat().st_mtime_ns):
        try:  # written from results.jsonl after it: the same table, 30x faster to read
            results = pd.read_parquet(parquet)
        except (OSError, ValueError):  # damaged: the log holds the same judgements
            results = None
        if results is not None and not set(RESULT_COLUMNS) <= set(results.columns):
            results = None
    if results is None:  # judging was interrupted (or never finished), or the table is damaged: from the log
        results = results_frame(list(judgements.values()))
    results["value"] = results["value"].astype(float)
    if summary is None and judgements:  # none, or left by an earlier evaluation: recomputed from the current lines
        summary = summarize(list(judgements.values()), n_resamples=1000)
    samples = samples_frame(results, judgements, traces, diagnoses)
    picks = picked_values(results)
    for metric in metric_columns(samples):  # the classifier's per-sample pick (not to_pandas's)
        samples[picked_column(metric)] = samples["sample_id"].map(picks[metric]).astype(float) if metric in picks \
            else np.nan
    return Run(folder=folder, judgements=judgements, traces=traces, diagnoses=diagnoses, results=results,
               samples=samples, summary=summary, summary_file=summary_file,
               report=None if stale else folder.read_json(DIAGNOSIS), run_summary=folder.read_json(RUN_SUMMARY),
               config=folder.config(), input_errors=folder.input_errors(), diagnoses_stale=stale)


def evaluation_status(run: Run) -> dict:
    """How far the run's evaluation got, read as `ragdoctor gate` reads a run: ``judged`` (samples with results),
    ``expected`` (config.json's samples; None without one), ``unjudged`` (samples with a trace and no results),
    ``total`` (the samples the run has, or config.json lists when it holds none), ``gate`` (the run's current
    summary.json is there, the one the gate checks: else no verdict is given),
    ``complete`` and ``note``: why the evaluation is not complete (or the run not evaluated), in one line."""
    judged = set(run.results["sample_id"]) | set(run.judgements)
    unjudged = [sid for sid in run.sample_ids if sid not in judged]
    samples = (run.config or {}).get("samples")
    expected = len(samples) if isinstance(samples, dict) else None
    rerun = "rerun `ragdoctor eval` (judged samples are reused)"
    note = None
    # a run whose evaluation stopped before its first result may hold no traces: config.json still lists its samples
    total = len(run.sample_ids) or expected or 0
    if not judged and expected is not None:
        note = (f"not evaluated: its evaluation stopped before the first result (none of its {total:,} samples has "
                "been judged); rerun `ragdoctor eval`")
    elif not judged:
        note = f"not evaluated: none of its {total:,} samples has been judged; run `ragdoctor eval`"
    elif expected is not None and len(judged) < expected:
        note = f"evaluation incomplete: {len(judged):,} of {expected:,} samples judged; {rerun}"
    elif not run.summary_file:
        why = "no summary.json (the evaluation did not finish)" if not run.folder.file(SUMMARY).exists() else \
            "its summary.json is not this evaluation's (left by an earlier one, or damaged)"
        note = f"evaluation incomplete: {why}; {rerun}"
    return {"judged": len(judged), "expected": expected, "total": total, "unjudged": unjudged, "gate": run.summary_file,
            "complete": note is None, "note": note}


# --- the wide samples table --------------------------------------------------------------------------------------

def _judge_order(judges: Iterable[str]) -> list[str]:
    return sorted(judges, key=lambda j: (trust_rank(j), j))


PICKED = "@pick"  # suffix of the column of the classifier's per-sample pick of a metric


def picked_column(metric: str) -> str:
    return metric + PICKED


def picked_values(results: pd.DataFrame) -> pd.DataFrame:
    """sample_id x metric: the value diagnostics.verdicts.pick reads per sample, so ``ragdoctor diagnose``'s: the most
    trusted judge that measured the sample (the next one where it did not; NaN where none did). Unlike the bare
    ``metric`` column (one judge for the whole column, as the gate reads it), the judge may change from sample to
    sample, as the quadrant (quadrant_points, through diagnostics.verdicts.pick) reads it."""
    if not len(results):
        return pd.DataFrame(index=pd.Index([], name="sample_id"))
    measured = ((results["status"] == "ok") & results["value"].notna()).to_numpy()
    order = pd.DataFrame({"sample_id": results["sample_id"].to_numpy(), "metric": results["metric"].to_numpy(),
                          "value": np.where(measured, results["value"].astype(float).to_numpy(), np.nan),
                          "unmeasured": ~measured, "rank": results["judge"].map(trust_rank).to_numpy(),
                          "pos": np.arange(len(results))})
    # pick's order: measured first, then the judge's trust, then the judgement's own order (a stable sort)
    first = order.sort_values(["unmeasured", "rank", "pos"], kind="stable").drop_duplicates(["sample_id", "metric"])
    return first.pivot(index="sample_id", columns="metric", values="value")


def metric_columns(samples: pd.DataFrame) -> dict[str, list[str]]:
    """metric -> its per-judge columns ("metric:judge") in judge-preference order."""
    out: dict[str, list[str]] = {}
    for col in samples.columns:
        if ":" in col:
            metric, _, _judge = col.partition(":")
            out.setdefault(metric, []).append(col)
    return {m: [f"{m}:{j}" for j in _judge_order(c.partition(":")[2] for c in cols)] for m, cols in
            sorted(out.items(), key=lambda kv: metric_rank(kv[0]))}


def _doc(c: Chunk | Candidate) -> str:
    return c.doc_id or c.chunk_id


def first_relevant_rank(trace: Trace | None) -> int | None:
    """Rank of the first retrieved chunk from a relevant document (top-k and candidates); None if none or unlabelled.
    None is "not retrieved" only for a trace eval's retrieval metrics measure: ask ``retrieval_left_out_reason`` first
    (contexts null or without doc ids, a question blocked before retrieval: left out, never a miss)."""
    if trace is None:
        return None
    ranks = [r for part in relevant_ranks(trace) for r in part]  # as the retrieval metrics read the labels
    return min(ranks) if ranks else None


def labelled_left_out(trace: Trace | None) -> tuple[bool, MetricResult | None]:
    """(labelled: the trace carries relevance labels; eval's result leaving it out of its retrieval metrics,
    ragdoctor.run_report's ``retrieval_left_out``: None when they measure it, or when it is unlabelled, which has
    nothing to leave out). The one test of "labelled, and left out by eval" every retrieval view reads."""
    if trace is None or not trace.relevance_grades:
        return False, None
    return True, retrieval_left_out(trace)


def retrieval_left_out_reason(trace: Trace | None) -> str | None:
    """Why eval's retrieval metrics leave out this labelled trace ("status: reason", as ``left_out_text`` words it:
    ragdoctor.run_report's ``retrieval_left_out``), None when they measure it or it carries no relevance label (an
    unlabelled question has nothing to leave out)."""
    _, r = labelled_left_out(trace)
    return None if r is None else f"{r.status.replace('_', ' ')}: {r.reason or ''}"


def relevance_labels(trace: Trace | None) -> dict:
    """The trace's relevance labels as eval's retrieval metrics (eval.metrics.retrieval) read them, never a copy of
    their rule: ``grades`` {label: grade} (``Trace.relevance_grades``: ``metadata.qrels`` when given, else grade 1 per
    ``relevant_doc_ids``); ``relevant`` the labels graded above 0 (``relevant_docs``: a grade-0 label is judged not
    relevant, never listed as relevant), ``relevant_doc_ids`` for an unlabelled trace (None, or [] for an unanswerable
    question); ``not_relevant`` the labels graded 0 or below; ``graded`` whether a grade other than 1 is given.
    Where eval measures the trace (labelled, ``labelled_left_out`` None): ``level`` ("chunk" when the labels name
    retrieved chunks, else "document": ``ranking``'s) and ``hits`` {(in context, rank, chunk id): the label it
    matches} for each retrieved chunk eval counts relevant (``relevant_ranks``, the contexts and candidates apart)."""
    grades = trace.relevance_grades if trace is not None else {}
    labelled, out = labelled_left_out(trace)
    relevant = relevant_docs(grades) if grades else (trace.relevant_doc_ids if trace is not None else None)
    labels: dict[str, Any] = {"grades": grades, "relevant": relevant, "graded": any(g != 1 for g in grades.values()),
                              "not_relevant": sorted(d for d, g in grades.items() if g <= 0),
                              "level": None, "hits": {}}
    if trace is None or not labelled or out is not None:
        return labels
    level = ranking(trace)[1]
    top, past = (set(ranks) for ranks in relevant_ranks(trace))
    wanted = set(labels["relevant"])
    for c in trace.ranked():
        # the chunk's id at eval's level names the label it matched (a rank shared by two chunks matches only its own)
        label = c.chunk_id if level == "chunk" else _doc(c)
        if c.rank in (past if isinstance(c, Candidate) else top) and label in wanted:
            labels["hits"][(not isinstance(c, Candidate), c.rank, c.chunk_id)] = label
    labels["level"] = level
    return labels


def samples_frame(results: pd.DataFrame, judgements: Mapping[str, Judgement], traces: Mapping[str, Trace],
                  diagnoses: Mapping[str, Diagnosis]) -> pd.DataFrame:
    """One row per sample: sample_id, question, outcome, category, secondary, rule, labelled (relevance labels given),
    retrieval_measured (labelled, and measured by eval's retrieval metrics), retrieval_left_out (labelled, left out by
    them: why, ``retrieval_left_out_reason``; None otherwise), first_relevant_rank (measured ones only: None there is
    "not retrieved"), n_retrieved, latency_ms, n_unmeasured; per metric the preferred judge's value (column
    ``metric``, judge preference as the classifier's) and each judge's (``metric:judge``); judges_disagree /
    disagree_on / judge_gap."""
    ids = list(dict.fromkeys([*judgements, *traces, *results["sample_id"].tolist()]))
    base = []
    for sid in ids:
        t, d = trace_of(sid, traces, judgements), diagnoses.get(sid)  # a judgement is parsed only without a trace
        # eval's rule (the recall curve's): a labelled trace whose retrieval is unknown (contexts null), whose contexts
        # carry no doc id, blocked before retrieval or with every label graded 0 has no first relevant rank to count:
        # left out with its reason, never "not retrieved"
        labelled, _ = labelled_left_out(t)
        left_out = retrieval_left_out_reason(t)
        measured = labelled and left_out is None
        base.append((sid, t.question if t else "", t.outcome if t else "", d.category if d else None,
                     ", ".join(d.secondary) if d else "", d.rule if d else "", labelled, measured, left_out,
                     first_relevant_rank(t) if measured else None, len(t.chunks) if t else 0,
                     t.latency_ms.get("total") if t else None, bool(t and refused(t))))
    frame = pd.DataFrame(base, columns=["sample_id", "question", "outcome", "category", "secondary", "rule", "labelled",
                                        "retrieval_measured", "retrieval_left_out", "first_relevant_rank",
                                        "n_retrieved", "latency_ms", "refusal"])
    frame["first_relevant_rank"] = frame["first_relevant_rank"].astype("Int64")
    frame["latency_ms"] = frame["latency_ms"].astype(float)
    ok = results[results["status"] == "ok"]
    if len(ok):
        wide = ok.pivot_table(index="sample_id", columns=["metric", "judge"], values="value", aggfunc="last")
        wide.columns = [f"{m}:{jn}" for m, jn in wide.columns]
    else:
        wide = pd.DataFrame(index=pd.Index([], name="sample_id"))
    # a (metric, judge) that measured no sample keeps its column, all NaN: absent would read as "never asked"
    asked = list(dict.fromkeys(f"{m}:{jn}" for m, jn in zip(results["metric"], results["judge"], strict=True)))
    wide = wide.reindex(columns=[*wide.columns, *(c for c in asked if c not in wide.columns)]).astype(float)
    unmeasured = results[results["status"] == "unmeasured"].groupby("sample_id").size()
    frame = frame.merge(wide, left_on="sample_id", right_index=True, how="left")
    frame["n_unmeasured"] = frame["sample_id"].map(unmeasured).fillna(0).astype(int)
    cols = metric_columns(frame)
    disagree_on = pd.Series("", index=frame.index)
    any_disagree = pd.Series(False, index=frame.index)
    gaps = pd.DataFrame(index=frame.index)
    for metric, mcols in cols.items():
        # the bare column is one judge's: the most trusted that measured any sample, as the gate reads it (falling back
        # to the next judge per row would mix judges within a column)
        frame[metric] = frame[next((c for c in mcols if frame[c].notna().any()), mcols[0])]
        if len(mcols) > 1:
            vals = frame[mcols].to_numpy(dtype=float)
            measured = ~np.isnan(vals)
            gaps[metric] = frame[mcols].max(axis=1) - frame[mcols].min(axis=1)
            if (m := find(metric)) is not None and m.model:
                yes = (vals >= m.cut) & measured
                no = (vals < m.cut) & measured
                split = yes.any(axis=1) & no.any(axis=1)
                any_disagree |= split
                disagree_on = disagree_on + np.where(split, metric + ", ", "")
    frame["judges_disagree"] = any_disagree.astype(bool)
    frame["disagree_on"] = disagree_on.str.rstrip(", ")
    frame["judge_gap"] = gaps.max(axis=1) if len(gaps.columns) else np.nan
    metric_first = [m for m in cols] + [c for mc in cols.values() for c in mc]
    lead = ["sample_id", "category", "outcome", "question"]
    rest = [c for c in frame.columns if c not in lead and c not in metric_first]
    return frame[lead + metric_first + rest].reset_index(drop=True)


# --- overview ----------------------------------------------------------------------------------------------------

def metrics_table(run: Run) -> pd.DataFrame:
    """Every (metric, judge) with n, mean and its 95% CI, unmeasured and not-applicable counts."""
    rows = (run.summary or {}).get("metrics", [])
    cols = ["metric", "judge", "n", "mean", "ci_low", "ci_high", "n_unmeasured", "n_not_applicable"]
    df = pd.DataFrame([{c: r.get(c) for c in cols} for r in rows], columns=cols)
    if len(df):
        df = df.sort_values(["metric", "judge"], key=lambda s: s.map(metric_rank) if s.name == "metric"
                            else s).reset_index(drop=True)
    return df


def gate_table(run: Run, cfg: GateConfig) -> pd.DataFrame:
    """The CI gate's checks (eval.gate.check) against ``cfg``, with the (metric, judge) row each check read: none
    without the run's current summary.json, on which `ragdoctor gate` gives no verdict either (it exits 2)."""
    cols = ["check", "passed", "observed", "threshold", "kind", "message", "metric", "judge"]
    if not run.summary or not run.summary_file or not cfg.has_thresholds:
        return pd.DataFrame(columns=cols)  # no current summary.json: `ragdoctor gate` gives no verdict either
    rows = []
    for c in check(run.summary, cfg):
        metric, _, judge = c.name.partition(":")
        row = primary(run.summary, metric, judge or None) if c.name in cfg.minimums else None
        rows.append({"check": c.name, "passed": c.passed, "observed": c.observed, "threshold": c.threshold,
                     "kind": c.kind, "message": c.message, "metric": row["metric"] if row else None,
                     "judge": row["judge"] if row else None})
    return pd.DataFrame(rows, columns=cols)


def with_gate(table: pd.DataFrame, gate: pd.DataFrame) -> pd.DataFrame:
    """metrics_table plus a ``gate`` column: pass / FAIL for the rows a threshold was checked against."""
    out = table.copy()
    status = {(r.metric, r.judge): ("pass" if r.passed else "FAIL") for r in gate.itertuples() if r.metric}
    out["gate"] = [status.get((m, j), "") for m, j in zip(out["metric"], out["judge"])]
    return out


def category_counts(run: Run) -> pd.DataFrame:
    """category, count, share, definition, examples (up to five ids), reasons: most frequent first. ``reasons`` is
    filled for ``unmeasured`` alone (no verdict, so no failure): why the diagnosis could not tell, each reason with its
    count, most frequent first (e.g. "answer correctness was not evaluated in this run ...")."""
    cols = ["category", "count", "share", "definition", "examples", "reasons"]
    cats = run.samples.loc[run.samples["category"].notna(), ["sample_id", "category", "rule"]]
    if not len(cats):
        return pd.DataFrame(columns=cols)
    counts = cats["category"].value_counts()
    examples = cats.groupby("category")["sample_id"].agg(lambda s: ", ".join(s.head(5)))
    rules = cats.loc[cats["category"] == "unmeasured", "rule"].fillna("").value_counts()
    unmeasured = "; ".join(f"{r or 'no reason recorded'} ({int(k)})" for r, k in rules.items())
    return pd.DataFrame([{"category": c, "count": int(k), "share": k / len(cats), "definition": DEFINITIONS.get(c, ""),
                          "examples": examples[c], "reasons": unmeasured if c == "unmeasured" else ""}
                         for c, k in counts.items()], columns=cols)


def unmeasured_table(run: Run) -> pd.DataFrame:
    """Every unmeasured result grouped by metric, judge and reason (the full count, not summary.json's top five)."""
    df = run.results[run.results["status"] == "unmeasured"]
    out = (df.assign(reason=df["reason"].fillna("unknown")).groupby(["metric", "judge", "reason"]).size()
           .rename("count").reset_index().sort_values("count", ascending=False))
    return out.reset_index(drop=True)


# --- one sample ---------------------------------------------------------------------------------------------------

_CITATION_GAP = r"(?:\s*\[[^\[\]\s]+#\d+\]\s*|\s+)"


def highlight_segments(answer: str, claims: list[dict]) -> list[dict]:
    """The answer cut into segments, each claim's span tagged with its verdict and number (1-based).

    Claims were decomposed from the answer with citations stripped and clause joints rewritten, so a claim is found
    word by word, allowing whitespace, a citation or changed clause punctuation between words. A claim not found in
    the text keeps its number and verdict in the claims list; its text simply stays untagged."""
    spans: list[tuple[int, int, int]] = []
    cursor = 0
    for n, c in enumerate(claims, 1):
        words = [w.rstrip(",;:") for w in re.sub(r"[.!?]+$", "", str(c.get("claim", "")).strip()).split()]
        words = [w for w in words if w]
        if not words:
            continue
        pattern = "".join(re.escape(w) + (r"[,;:]?" + _CITATION_GAP if i < len(words) - 1 else "")
                          for i, w in enumerate(words))
        rx = re.compile(pattern, re.IGNORECASE)
        m = rx.search(answer, cursor) or rx.search(answer)
        if m is None or any(m.start() < e and s < m.end() for s, e, _ in spans):
            continue
        spans.append((m.start(), m.end(), n))
        cursor = m.end()
    spans.sort()
    out: list[dict] = []
    pos = 0
    for s, e, n in spans:
        if s > pos:
            out.append({"text": answer[pos:s], "verdict": None, "claim": None})
        out.append({"text": answer[s:e], "verdict": claims[n - 1].get("verdict"), "claim": n})
        pos = e
    if pos < len(answer):
        out.append({"text": answer[pos:], "verdict": None, "claim": None})
    return out


def sample_detail(j: Judgement | None, trace: Trace | None, d: Diagnosis | None, *, sample_id: str = "") -> dict:
    """Everything the drill-down shows for one sample, from whichever records exist (``trace``: the traces log's, else
    the judged one). The labels are read as eval's retrieval metrics read them (``relevance_labels``):
    ``relevant_doc_ids`` the labels graded above 0 (qrels alone label a trace too), ``relevance_grades`` their grades
    when graded (else None), ``not_relevant`` the labels graded 0 or below, ``relevance_level`` "chunk" or "document"
    (how eval matched them; None when it does not measure the trace) and ``relevant_found`` {label: rank of the first
    retrieved chunk eval matched to it, None: not retrieved}. ``retrieval_left_out``: why eval's retrieval metrics
    leave this labelled trace out (``retrieval_left_out_reason``), None when they measure it: when not None,
    ``relevant_found`` holds no verdict (None for every label: not judged, never "not retrieved") and no chunk is
    called relevant or not."""
    trace = trace or (j.trace if j is not None else None)
    sid = (j.sample_id if j else None) or (trace.sample_id if trace else None) or sample_id
    question, answer = (trace.question, trace.answer) if trace else ("", "")
    reference = trace.reference if trace else None
    labels = relevance_labels(trace)
    relevant, hits = labels["relevant"], labels["hits"]
    results = j.results if j is not None else []
    metrics = pd.DataFrame([{"metric": r.metric, "judge": r.judge, "value": r.value, "status": r.status,
                             "reason": r.reason} for r in results],
                           columns=["metric", "judge", "value", "status", "reason"])
    claims = {r.judge: list(r.evidence.get("claims", [])) for r in results
              if r.metric == "groundedness" and r.measured and r.evidence.get("claims")}
    cp = {r.judge: {c["chunk_id"]: c for c in r.evidence.get("chunks", [])} for r in results
          if r.metric == "context_precision" and r.measured}
    # blank chunks: no verdict, left out of context precision's ranking (its evidence names them)
    blank = {r.judge: set(r.evidence.get("blank_chunks") or []) for r in results
             if r.metric == "context_precision" and r.evidence.get("blank_chunks")}
    correctness = {r.judge: {k: r.evidence.get(k) for k in ("precision", "recall", "note", "answer_claims",
                                                             "reference_claims")} for r in results
                   if r.metric == "answer_correctness" and r.measured}
    # chunks in rank order, the top-k contexts then the candidates past the cut
    texts = {c.chunk_id: {"text": c.text, "title": c.title, "score": c.score, "flags": c.flags}
             for c in (trace.chunks if trace else [])}
    # eval's retrieval rule (samples_frame's, the recall curve's): a labelled trace it leaves out (contexts null or
    # without doc ids, blocked before retrieval, every label graded 0) cannot be judged here either: no relevant
    # document is "not retrieved", no chunk "not a relevant document"; the reason is shown instead
    left_out = retrieval_left_out_reason(trace)
    # each chunk relevant or not where eval matched the labels, and where the question is labelled unanswerable
    # (relevant_doc_ids [] and no grade: no chunk is relevant)
    judged = labels["level"] is not None or (relevant == [] and not labels["grades"])
    chunks: list[dict[str, Any]] = []
    for c in trace.ranked() if trace else []:
        rank, cid, doc, signals = c.rank, c.chunk_id, _doc(c), c.signals
        key = (not isinstance(c, Candidate), rank, cid)
        marks = [{"judge": jn, "claim": n, "verdict": c.get("verdict"), "sentence": c.get("sentence")}
                 for jn, cl in claims.items() for n, c in enumerate(cl, 1)
                 if c.get("chunk_id") == cid and c.get("verdict") in ("supported", "contradicted")]
        info = texts.get(cid)
        chunks.append({"rank": rank, "chunk_id": cid, "doc_id": doc, "in_context": info is not None,
                       "relevant": (key in hits) if judged else None,
                       "text": (info or {}).get("text"),
                       "title": (info or {}).get("title", ""), "score": (info or {}).get("score"),
                       "flags": (info or {}).get("flags", []), "signals": signals, "marks": marks,
                       "context_precision": {jn: v[cid].get("relevant") for jn, v in cp.items() if cid in v},
                       "precision_blank": [jn for jn, ids in blank.items()
                                           if cid in ids and cid not in cp.get(jn, {})]})
    # a rank for each relevant label eval found; None is "not retrieved" only when ``retrieval_left_out`` is None
    found = {label: min((key[1] for key, hit in hits.items() if hit == label), default=None)
             for label in (relevant or [])}
    latency = trace.latency_ms if trace is not None else {}
    judge = next((jn for jn in _judge_order(claims)), None)
    diagnosis = None
    if d is not None:
        diagnosis = {"category": d.category, "definition": DEFINITIONS.get(d.category, ""), "rule": d.rule,
                     "secondary": d.secondary, "secondary_rules": d.evidence.get("secondary_rules", {}),
                     "evidence": {k: v for k, v in d.evidence.items() if k not in ("metrics", "secondary_rules")},
                     "probe": d.probe}
    return {"sample_id": sid, "question": question, "reference": reference, "answer": answer,
            "outcome": trace.outcome if trace else "", "error": trace.error if trace else None,
            "relevant_doc_ids": relevant, "relevant_found": found, "metrics": metrics, "claims": claims,
            "relevance_grades": {label: labels["grades"][label] for label in relevant or []} if labels["graded"]
            else None, "not_relevant": labels["not_relevant"], "relevance_level": labels["level"],
            "retrieval_known": trace is None or trace.has_contexts, "retrieval_left_out": left_out,
            "claim_judge": judge, "segments": highlight_segments(answer, claims.get(judge, [])) if judge else
            [{"text": answer, "verdict": None, "claim": None}], "correctness": correctness, "chunks": chunks,
            "latency_ms": dict(latency), "diagnosis": diagnosis, "probe": d.probe if d is not None else None,
            "guardrails": trace.guardrails if trace is not None else {},
            # an imported trace says where its answer came from and why its contexts are unknown (metadata)
            "answer_from": trace.metadata.get("answer_from") if trace is not None else None,
            "contexts_missing": trace.metadata.get("contexts_missing") if trace is not None else None}


# --- disagreements -----------------------------------------------------------------------------------------------

def _jitter(ids: pd.Series, scale: float) -> np.ndarray:
    """Deterministic per-sample offsets in [-scale, scale], so stacked points separate the same way every time."""
    h = pd.util.hash_pandas_object(ids, index=False).to_numpy(dtype=np.uint64)
    u = (h % np.uint64(10_007)).astype(float) / 10_006.0
    return (u - 0.5) * 2 * scale


def _view(x: str, y: str) -> View:
    return QUADRANT_VIEWS.get((x, y)) or View(f"{x}_x_{y}", x, y, {
        (True, True): "high_high", (True, False): "high_low", (False, True): "low_high", (False, False): "low_low"})


def quadrant_points(run: Run, x: str = "groundedness", y: str = "answer_correctness", x_judge: str | None = None,
                    y_judge: str | None = None, *, jitter: float = 0.0) -> pd.DataFrame:
    """Every judged sample of the run, where diagnostics.disagreement.place puts it (the report's own reading, so the
    quadrant never contradicts a sample's category): ``quadrant`` is one of the view's four cells, ``unmeasured`` or
    ``left_out`` (``why``: the unmeasured metric, or refusal / blocked / partial / not_applicable), with its
    plain-language explanation. ``x_judge``/``y_judge`` name the judge read on each axis (None: the classifier's pick
    per sample, so the counts are diagnosis.json's); ``x``/``y`` are the values read (NaN where unmeasured), and
    ``placed`` says the sample is in one of the four cells (what the chart plots)."""
    cols = ["sample_id", "x", "y", "x_plot", "y_plot", "quadrant", "why", "placed", "explanation", "category",
            "question"]
    view = _view(x, y)
    places = placements([run.judgements[sid] for sid in run.judgements], view, (x_judge, y_judge))
    if not places:
        return pd.DataFrame(columns=cols)
    cells = set(view.names.values())
    df = pd.DataFrame({"sample_id": [p.sample_id for p in places],
                       "x": [np.nan if p.x is None else p.x for p in places],
                       "y": [np.nan if p.y is None else p.y for p in places],
                       "quadrant": [p.cell for p in places], "why": [p.why for p in places],
                       "placed": [p.cell in cells for p in places]})
    info = run.samples.set_index("sample_id")[["category", "question"]]
    info = info[~info.index.duplicated()]
    df = df.join(info, on="sample_id")
    df["explanation"] = df["quadrant"].map(lambda q: EXPLANATIONS.get(q, ""))
    df["x_plot"] = df["x"] + (_jitter(df["sample_id"], jitter) if jitter else 0.0)
    df["y_plot"] = df["y"] + (_jitter(df["sample_id"] + "|y", jitter) if jitter else 0.0)
    return df[cols].reset_index(drop=True)


def quadrant_summary(points: pd.DataFrame, x: str = "groundedness", y: str = "answer_correctness") -> pd.DataFrame:
    """quadrant, count, share, explanation, cut values, why (the reasons of a bucket, counted): every cell of the view
    and the unmeasured and left-out buckets, empty ones included; shares are of every judged sample."""
    view = _view(x, y)
    (x_cut, y_cut), names = view.cuts, view.names
    order = [*names.values(), *BUCKETS]
    counts = points["quadrant"].value_counts()
    n = max(1, len(points))
    why = {q: dict(Counter(points.loc[points["quadrant"] == q, "why"].dropna())) for q in BUCKETS}
    return pd.DataFrame([{"quadrant": q, "count": int(counts.get(q, 0)), "share": counts.get(q, 0) / n,
                          "explanation": EXPLANATIONS.get(q, ""), "x_cut": x_cut, "y_cut": y_cut,
                          "why": why.get(q, {})} for q in order])


def judge_pairs(samples: pd.DataFrame, metric: str) -> list[tuple[str, str]]:
    judges = [c.partition(":")[2] for c in metric_columns(samples).get(metric, [])
              if samples[c].notna().any()]
    return [(a, b) for i, a in enumerate(judges) for b in judges[i + 1:]]


def judge_agreement(samples: pd.DataFrame, metric: str, a: str, b: str, cut: float | None = None) -> dict:
    """Two judges on one metric, per sample: the points, the 2x2 table at ``cut`` and the agreement rate."""
    cut = verdict_cut(metric) if cut is None else cut
    ca, cb = f"{metric}:{a}", f"{metric}:{b}"
    if ca not in samples or cb not in samples:
        return {"points": pd.DataFrame(columns=["sample_id", a, b, "agree"]), "confusion": pd.DataFrame(), "n": 0,
                "agreement": None, "cut": cut, "spearman": None}
    df = samples.loc[samples[ca].notna() & samples[cb].notna(), ["sample_id", ca, cb, "category", "question"]]
    df = df.rename(columns={ca: a, cb: b})
    ya, yb = df[a] >= cut, df[b] >= cut
    df["agree"] = ya == yb
    la, lb = f"{a} >= {cut:g}", f"{b} >= {cut:g}"
    conf = pd.crosstab(ya.map({True: "yes", False: "no"}).rename(la), yb.map({True: "yes", False: "no"}).rename(lb))
    conf = conf.reindex(index=["yes", "no"], columns=["yes", "no"], fill_value=0)
    # Spearman as the Pearson correlation of ranks (pandas' method="spearman" imports scipy: seconds)
    spearman = float(df[a].rank().corr(df[b].rank())) if len(df) > 2 and df[a].nunique() > 1 and \
        df[b].nunique() > 1 else None
    return {"points": df.reset_index(drop=True), "confusion": conf, "n": len(df),
            "agreement": float(df["agree"].mean()) if len(df) else None, "cut": cut, "spearman": spearman}


def claim_agreement(run: Run) -> dict:
    """Claim-level judge-vs-judge verdicts on groundedness, from diagnosis.json (or computed when it is missing)."""
    jd = (run.report or {}).get("judge_disagreements")
    if jd is None:
        jd = judge_disagreements(run.all_judgements())
    return jd


def confusion_frame(entry: dict) -> pd.DataFrame:
    """A judge_disagreements entry's ``confusion`` ("verdict_a|verdict_b" -> count) as a verdict x verdict table."""
    ja, jb = entry["judges"]
    rows = [{ja: k.split("|")[0], jb: k.split("|")[1], "count": v} for k, v in entry.get("confusion", {}).items()]
    if not rows:
        return pd.DataFrame()
    order = ["supported", "unsupported", "contradicted"]
    t = pd.DataFrame(rows).pivot_table(index=ja, columns=jb, values="count", aggfunc="sum", fill_value=0)
    return t.reindex(index=[v for v in order if v in t.index] + [v for v in t.index if v not in order],
                     columns=[v for v in order if v in t.columns] + [v for v in t.columns if v not in order])


# --- retrieval ---------------------------------------------------------------------------------------------------

def _mode(chunks: list[Chunk | Candidate]) -> str:
    keys = {k for c in chunks for k in c.signals}
    if "rrf_score" in keys or "fused_score" in keys:  # reciprocal rank or weighted score fusion
        return "hybrid"
    if "dense_rank" in keys and "bm25_rank" not in keys:
        return "dense"
    if "bm25_rank" in keys and "dense_rank" not in keys:
        return "bm25"
    return "retrieved"


def rankings(run: Run) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, list[str]]], bool]:
    """qrels, and per ranking (the run's own, plus dense and BM25 when its chunks carry their signals) the ranking of
    every labelled query, by document or, where its labels name chunks, by chunk (as the retrieval metrics read it);
    third: whether per-retriever ranks are complete (candidates carry signals)."""
    qrels: dict[str, dict[str, int]] = {}
    ranked: dict[str, dict[str, list[str]]] = {}
    complete = True
    modes: Counter = Counter()
    for sid in run.sample_ids:
        t = run.trace(sid)
        # eval's rule (the run summary's too): unlabelled, blocked before retrieval, contexts null (retrieval unknown)
        # or contexts without doc ids (which documents were found unknown) are left out, never a recall of 0
        if t is None or labelled_left_out(t) != (True, None):  # measured: labelled, and not left out
            continue
        chunks = t.ranked()
        qrels[sid] = t.relevance_grades
        modes[_mode(chunks)] += 1
        ids, level = ranking(t)
        ranked.setdefault("run", {})[sid] = ids  # as the retrieval metrics read it
        for name in ("dense", "bm25"):  # at the run's level: chunks when the labels name chunks, else documents
            key = f"{name}_rank"
            with_rank = [(c.signals[key], c.chunk_id if level == "chunk" else _doc(c)) for c in chunks
                         if key in c.signals]
            if with_rank:
                ranked.setdefault(name, {})[sid] = [doc for _, doc in sorted(with_rank)]
        if any(not c.signals for c in chunks) and any(c.signals for c in chunks):
            complete = False
    mode = modes.most_common(1)[0][0] if modes else "retrieved"
    out = {mode: ranked.pop("run", {})}
    if mode == "hybrid":
        out.update({k: v for k, v in ranked.items() if k != mode})
    return qrels, out, complete


def recall_left_out(run: Run) -> dict[str, dict[str, list[str]]]:
    """The labelled samples the recall curve leaves out, as eval's retrieval metrics do (ragdoctor.run_report's
    ``retrieval_left_out``): {status (unmeasured, not_applicable): {reason: sample ids}}, most frequent reason first.
    Among them those whose contexts are null (their record's ``contexts_missing`` reason, e.g. an imported span that
    dropped its documents, in eval's reason) and those whose contexts carry no doc_id."""
    found: dict[tuple[str, str], list[str]] = {}
    for sid in run.sample_ids:
        _, r = labelled_left_out(run.trace(sid))
        if r is not None:
            found.setdefault((r.status, r.reason or ""), []).append(sid)
    out: dict[str, dict[str, list[str]]] = {}
    for (status, reason), ids in sorted(found.items(), key=lambda kv: -len(kv[1])):
        out.setdefault(status, {})[reason] = ids
    return out


def left_out_text(left_out: Mapping[str, Mapping[str, list[str]]]) -> str:
    """One line: how many labelled samples were left out and why ("" when none)."""
    parts = [f"{len(ids)} {status.replace('_', ' ')}: {reason}" for status, reasons in left_out.items()
             for reason, ids in reasons.items()]
    return f"left out: {'; '.join(parts)}" if parts else ""


def recall_curve(run: Run, ks: Iterable[int] = range(1, 21)) -> pd.DataFrame:
    """ranking, k, recall (mean recall@k over the labelled queries eval's retrieval metrics measure, documents),
    n_queries, note, n_left_out and left_out (the labelled samples left out, and why, ``recall_left_out``: the same on
    every row; when every labelled sample is left out, the rows say so with recall None, never 0). For a hybrid run the
    dense and BM25 rankings come from the ranks recorded on the retrieved chunks: those are lower bounds when the
    candidates past the cut carry no signals (see ``rankings``), noted in the ``note`` column."""
    ks = sorted(set(int(k) for k in ks))
    cols = ["ranking", "k", "recall", "n_queries", "note", "n_left_out", "left_out"]
    qrels, ranked, complete = rankings(run)
    left_out = recall_left_out(run)
    n_left_out = sum(len(ids) for reasons in left_out.values() for ids in reasons.values())
    why = left_out_text(left_out)
    rows = []
    for name, rk in ranked.items():
        q = {sid: qrels[sid] for sid in rk}
        means = mean_metrics(retrieval_metrics(q, rk, ks=ks))
        note = "" if name not in ("dense", "bm25") else (
            "lower bound: read from the ranks recorded on the fused list, which misses chunks only this retriever "
            "ranked past the fusion cut" if complete else
            "lower bound: only the top-k chunks carry this retriever's rank (the candidates past the cut record none)")
        rows += [{"ranking": name, "k": k, "recall": means.get(f"recall@{k}"), "n_queries": len(q), "note": note,
                  "n_left_out": n_left_out, "left_out": why}
                 for k in ks if means or why]  # none measured, some left out: recall unmeasured (None), with why
    return pd.DataFrame(rows, columns=cols)


FIRST_RELEVANT_COLUMNS = ["rank", "order", "count", "bucket", "why"]


def first_relevant_table(samples: pd.DataFrame) -> pd.DataFrame:
    """rank, order, count, bucket, why: how many labelled queries eval's retrieval metrics measure have their first
    relevant chunk at each rank (bucket "rank"), none retrieved ("not retrieved", after the ranks), and, last, the
    labelled ones they leave out, one row per reason (rank and bucket "left out", ``why`` the reason): never counted
    as not retrieved."""
    measured = samples[samples["retrieval_measured"]]
    ranks = measured["first_relevant_rank"]
    counts = ranks.dropna().astype(int).value_counts().sort_index()
    rows = [{"rank": str(r), "order": int(r), "count": int(c), "bucket": "rank", "why": ""} for r, c in counts.items()]
    missing = int(ranks.isna().sum())
    if missing:
        rows.append({"rank": "not retrieved", "order": 10**6, "count": missing, "bucket": "not retrieved", "why": ""})
    left = samples.loc[samples["labelled"] & ~samples["retrieval_measured"], "retrieval_left_out"]
    for i, (why, n) in enumerate(left.fillna("").value_counts().items(), 1):  # most frequent reason first
        rows.append({"rank": "left out", "order": 10**6 + i, "count": int(n), "bucket": "left out", "why": str(why)})
    return pd.DataFrame(rows, columns=FIRST_RELEVANT_COLUMNS)


# --- calibrated by human labels --------------------------------------------------------------------------------

def calibrated(run: Run, n_resamples: int = 1000) -> list[dict]:
    """The run's judges calibrated by its labels.jsonl as it is now (eval.calibration.calibrate; bad lines reported and
    skipped)."""
    labels = read_labels(run.folder)
    return calibrate(run.results, labels, n_resamples=n_resamples) if labels else []


CALIBRATED_COLUMNS = ["metric", "judge", "labels", "judge mean", "PPI mean", "PPI CI low", "PPI CI high", "lambda",
                      "AUROC", "AUROC CI low", "AUROC CI high", "accuracy", "accuracy CI low", "accuracy CI high",
                      "note"]


def calibrated_table(rows: list[dict]) -> pd.DataFrame:
    """The calibrated rows as a table, all that `ragdoctor summary` prints: labels, judge mean, PPI mean and CI (or
    why there is none) with its lambda, AUROC and accuracy against the labels with their 95% CIs, and the note."""
    def ci(a: dict, key: str) -> list:
        v = a.get(key) or [None, None]
        return list(v) if len(v) == 2 else [None, None]

    return pd.DataFrame([[r["metric"], r["judge"], r["n_labels"], r["judge_mean"], r["mean"], r["ci_low"],
                          r["ci_high"], r.get("lam"), r["agreement"]["auroc"], *ci(r["agreement"], "auroc_ci"),
                          r["agreement"]["accuracy"], *ci(r["agreement"], "accuracy_ci"), calibration_note(r)]
                         for r in rows], columns=CALIBRATED_COLUMNS)
