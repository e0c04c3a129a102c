"""The Label page's data: which sample to label next (eval/labelling.py's stratified queue over the judge's score),
how many labels each metric has, and the PPI-calibrated estimates (eval/calibration.py). No streamlit here.

labels.jsonl is read on every rerun of the page (it is small), not through the cached run: a label written must show
at once, and must not make the whole run reload."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from corpora.records import Label, Trace
from eval.labelling import queue
from eval.ppi import MIN_LABELS
from ragdoctor.dashboard.data import Run

# metric -> (the question a person answers, its yes/no keyboard shortcuts)
QUESTIONS: dict[str, tuple[str, str, str]] = {
    "groundedness": ("Grounded: is every claim of the answer supported by the contexts?", "1", "2"),
    "answer_correctness": ("Correct: does the answer say what the reference (or the truth) says?", "3", "4"),
    "context_precision": ("Context relevant: are the retrieved contexts about what the question asks?", "5", "6"),
}
LABEL_SET = tuple(QUESTIONS)
NEXT_SHORTCUT = "N"


@dataclass
class Progress:
    target: int
    counts: dict[str, int]  # metric -> samples of the run with a label of it
    done: set[str]  # samples labelled on every metric of the set (by anyone)
    order: list[str]  # the rest, in the order to label them


def scores_for(run: Run, metric: str) -> dict[str, float | None]:
    """The preferred judge's score of ``metric`` per sample (None when it did not measure it)."""
    samples = run.samples
    if metric not in samples:
        return dict.fromkeys(samples["sample_id"])
    values = samples[metric].astype(float).to_numpy()
    return {sid: (None if np.isnan(v) else float(v)) for sid, v in zip(samples["sample_id"], values)}


def progress(run: Run, labels: Iterable[Label], metrics: Sequence[str], stratify: str, *, skipped: Iterable[str] = (),
             bins: int = 5, seed: int = 0) -> Progress:
    ids = set(run.sample_ids)
    by_metric: dict[str, set[str]] = {m: set() for m in metrics}
    counts: dict[str, set[str]] = {}
    for label in labels:
        if label.sample_id in ids:
            counts.setdefault(label.metric, set()).add(label.sample_id)
            if label.metric in by_metric:
                by_metric[label.metric].add(label.sample_id)
    done = set.intersection(*by_metric.values()) if by_metric else set()
    order = [s for s in queue(scores_for(run, stratify), done, bins=bins, seed=seed) if s not in set(skipped)]
    return Progress(MIN_LABELS, {m: len(counts.get(m, ())) for m in [*metrics, *counts]}, done, order)


def unusable(run: Run) -> dict[str, str]:
    """metric of LABEL_SET -> why this run cannot use a label of it (as `ragdoctor label` warns): no sample has
    retrieved contexts (groundedness, context precision) or a reference answer (correctness), or the run's evaluation
    measured the metric on no sample (with the reason its results give). A run not evaluated yet can use any label
    its records allow (they count once it is evaluated)."""
    out: dict[str, str] = {}
    no_contexts = not bool((run.samples["n_retrieved"] > 0).any())
    no_reference = bool(run.traces) and not any(t.reference for t in run.traces.values())
    r = run.results
    for metric in LABEL_SET:
        rows = r[r["metric"] == metric]
        if metric in ("groundedness", "context_precision") and no_contexts:
            out[metric] = "no sample of this run has retrieved contexts"
        elif metric == "answer_correctness" and no_reference:
            out[metric] = "no sample of this run has a reference answer"
        elif len(r) and not (rows["status"] == "ok").any():
            reasons = rows["reason"].dropna()
            why = f" ({reasons.value_counts().index[0]})" if len(reasons) else ""
            out[metric] = f"this run measured it on no sample{why}"
    return out


def labelled_trace(run: Run, sample_id: str) -> Trace | None:
    """The answer a label judges: the one the evaluation scored (what the labels calibrate, and the hash
    ``ragdoctor label`` records: config.json's), else the latest trace (a run not evaluated yet). A sample answered
    again since its evaluation is labelled as it was judged until ``ragdoctor eval`` runs again."""
    j = run.judgement(sample_id)
    return j.trace if j is not None and j.trace is not None else run.trace(sample_id)


def labels_of(labels: Iterable[Label], sample_id: str, who: str | None = None) -> dict[str, Label]:
    """The labels in force of one sample (by ``who`` when given: compared as Label.key does, without case or the
    spaces around it), by metric."""
    me = None if who is None else who.strip().casefold()
    return {lb.metric: lb for lb in labels if lb.sample_id == sample_id and (me is None or lb.key[2] == me)}


def judge_values(run: Run, sample_id: str) -> list[dict]:
    """Every judge's value of every metric for one sample (shown only when asked: they anchor a labeller)."""
    r = run.results
    rows = r[r["sample_id"] == sample_id]
    return [{"metric": x.metric, "judge": x.judge, "value": x.value, "status": x.status}
            for x in rows.itertuples(index=False)]
