"""Judge scores calibrated by human labels: per (metric, judge) with labels, the prediction-powered (PPI++) estimate of
the mean a person would give, with its 95% CI, next to the judge's plain mean, and the judge's agreement with the
labels (AUROC with a bootstrap CI when the labels are binary and both classes are there; accuracy at the metric's
verdict cut). With fewer than ``MIN_LABELS`` labels the corrected estimate is ``unmeasured`` with the reason.

Inputs are the long results table (eval.summary.results_frame: sample x metric x judge) and the labels in force
(corpora/labels.py); only labels of samples in the run count. A sample labelled by several people counts once, with the
mean of their values; the judge's agreement (AUROC, accuracy) is read on yes/no labels only, so a sample whose labellers
disagree (one yes, one no: mean 0.5) is left out of it, and said. The labelled samples are the PPI's labelled set, the
run's other measured samples its unlabelled set (eval/ppi.py). PPI's interval assumes the labelled samples are a random
draw from the run: the dashboard's labelling queue (eval/labelling.py) keeps them one (a proportional stratified draw
over the judge's score).
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from corpora.errors import InputError
from corpora.labels import human_values, labeller_values, read_labels
from corpora.records import Label
from corpora.run_folder import RESULTS_TABLE, RunFolder
from eval.mathx import MIN_BOOTSTRAP, wilson_interval
from eval.meta.stats import auroc, auroc_ranks, bootstrap_ci, smaller_class
from eval.metrics import find
from eval.ppi import MIN_LABELS, judge_mean, labels_mean, ppi_mean


def _r(x: float | None) -> float | None:
    return None if x is None else round(float(x), 6)


def _unit(x: float) -> float:
    return min(1.0, max(0.0, float(x)))


MIN_PER_CLASS = MIN_BOOTSTRAP  # labels of each class before the AUROC gets a bootstrap CI


def agreement(y: np.ndarray, f: np.ndarray, cut: float, *, n_resamples: int = 1000, seed: int = 0,
              disputed: int = 0) -> dict:
    """How the judge's scores ``f`` agree with human labels ``y`` on the same samples: AUROC (on the labels that are
    exactly 0 or 1, both classes there; graded ones among them are left out of it, and said) and accuracy of
    ``f >= cut`` against the label's yes (> 0.5) or no (< 0.5; a label of exactly 0.5 says neither, and is not
    counted): accuracy with its Wilson 95% interval (honest when every label agrees), AUROC with a
    percentile bootstrap 95% CI once each class has MIN_PER_CLASS labels. ``disputed``: samples already left out
    because their labellers disagree (said in the reason and as ``n_disputed``)."""
    out: dict = {"n": int(y.size), "threshold": cut, "auroc": None, "auroc_ci": [None, None], "accuracy": None,
                 "accuracy_ci": [None, None], "n_positive": int((y > 0.5).sum()), "n_negative": int((y < 0.5).sum()),
                 "n_disputed": disputed, "reason": None}
    left_out = f"{disputed} sample(s) left out: their labellers disagree" if disputed else None
    if y.size == 0:  # nothing left to read: every labelled sample disputed, or none measured by the judge
        out["reason"] = (f"all {disputed} labelled sample(s) the judge measured are disputed: their labellers "
                         "disagree (no yes/no to compare with)") if disputed else \
            "no labelled sample the judge measured"
        return out
    said = y != 0.5
    if said.any():
        hit = ((f[said] >= cut) == (y[said] > 0.5)).astype(float)
        out["accuracy"] = _r(hit.mean())
        out["accuracy_ci"] = [_r(v) for v in wilson_interval(float(hit.sum()), int(hit.size))]
    yes_no = (y == 0) | (y == 1)  # the AUROC reads these; a graded label among them is left out of it, and said
    graded = int((~yes_no).sum())
    graded_out = f"{graded} graded label(s) left out of the AUROC" if graded and yes_no.any() else None
    yb, fb = y[yes_no], f[yes_no]
    pos, neg = int((yb == 1).sum()), int((yb == 0).sum())
    if not yes_no.any():
        out["reason"] = "AUROC needs yes/no labels (these are graded)"
    elif pos == 0 or neg == 0:
        only = "yes" if neg == 0 else "no"
        out["reason"] = f"AUROC needs both classes (all {yb.size}{' yes/no' * bool(graded)} labels are {only})"
    else:
        out["auroc"] = _r(auroc(fb, yb))
        if min(pos, neg) >= MIN_PER_CLASS:  # perfectly separated: Wilson, said so
            ci, note = bootstrap_ci(lambda i: auroc_ranks(fb[i], yb[i]), yb.size, n_resamples=n_resamples,
                                    seed=seed, refuse_zero_width=True, wilson_n=smaller_class(yb, None))
            out["auroc_ci"] = [_r(v) for v in ci]
            out["reason"] = f"AUROC CI: {note}" if note else None
        else:  # a bootstrap of 2 yes and 1 no is a handful of distinct resamples: no interval worth the name
            out["reason"] = f"AUROC CI needs {MIN_PER_CLASS} labels of each class"
    unsaid = None if said.any() else "accuracy needs labels that say yes or no (every one is 0.5)"
    out["reason"] = "; ".join(filter(None, [left_out, graded_out, out["reason"], unsaid])) or None
    return out


def _agreement_of(by: dict[str, list[float]], lab: list[str], y: np.ndarray, f: np.ndarray, cut: float,
                  **kw) -> dict:
    """agreement() of a (metric, judge), read on the samples whose labellers agree: one person's "no" beside
    another's "yes" is a mean of 0.5, not a graded label, and must not take the AUROC away from the whole metric (nor
    count as a yes). A sample with a graded label is kept (its mean is a graded label)."""
    disputed = np.array([len(set(by[s])) > 1 and all(v in (0.0, 1.0) for v in by[s]) for s in lab], dtype=bool)
    return agreement(y[~disputed], f[~disputed], cut, disputed=int(disputed.sum()), **kw)


def calibrate(results: pd.DataFrame, labels: Iterable[Label], *, min_labels: int = MIN_LABELS,
              n_resamples: int = 1000, seed: int = 0, stale: Iterable[Label] = ()) -> list[dict]:
    """One row per (metric, judge) whose metric has a label on a sample of the run (see the module docstring), or
    labels that count for none: on samples not in this run (a labels file of another run, a typo) or (``stale``:
    read_labels' collector) of an earlier answer of their sample. Such a row is unmeasured, and its reason counts them
    (``gate --ppi`` says it): "0 labels, need 30 (40 more on samples not in this run)", not "0 labels"."""
    ids = set(results["sample_id"])
    labels = list(labels)
    each = labeller_values(labels)  # each labeller's value, grouped once: the mean for PPI, agreement for the AUROC
    human = {m: {sid: sum(v) / len(v) for sid, v in by.items() if sid in ids} for m, by in each.items()}
    foreign = {m: sum(1 for sid in by if sid not in ids) for m, by in each.items()}
    old: dict[str, set[str]] = {}
    for lb in stale:
        if lb.sample_id not in human.get(lb.metric, {}):
            old.setdefault(lb.metric, set()).add(lb.sample_id)
    rows: list[dict] = []
    ok = results[(results["status"] == "ok") & results["value"].notna()]
    for metric, judge in results[["metric", "judge"]].drop_duplicates().itertuples(index=False):
        y_by = human.get(str(metric)) or {}
        uncounted = {"on samples not in this run": foreign.get(str(metric), 0),
                     "labelled an earlier answer of their sample": len(old.get(str(metric), ()))}
        if not y_by and not any(uncounted.values()):
            continue
        scores = ok[(ok["metric"] == metric) & (ok["judge"] == judge)]
        f_by = dict(zip(scores["sample_id"], scores["value"].astype(float)))
        lab = [sid for sid in y_by if sid in f_by]
        y = np.array([y_by[s] for s in lab], dtype=float)
        f = np.array([f_by[s] for s in lab], dtype=float)
        fu = np.array([v for s, v in f_by.items() if s not in y_by], dtype=float)
        m = find(str(metric))
        row: dict = {"metric": metric, "judge": judge, "n_labels": len(lab), "n_labels_unjudged": len(y_by) - len(lab),
                     "n_judged": len(f_by), "judge_mean": _r(judge_mean(list(f_by.values())).mean) if f_by else None,
                     "status": "unmeasured", "reason": None, "method": None, "mean": None, "ci_low": None,
                     "ci_high": None, "lam": None, "labels_mean": _r(float(y.mean())) if y.size else None,
                     "agreement": _agreement_of(each.get(str(metric), {}), lab, y, f, m.cut if m else 0.5,
                                                n_resamples=n_resamples, seed=seed)}
        if len(lab) < max(2, min_labels):  # an interval needs two labels whatever min_labels says
            more = {"on samples this judge did not measure": row["n_labels_unjudged"], **uncounted}
            said = "; ".join(f"{n} more {why}" for why, n in more.items() if n)
            row["reason"] = f"{len(lab)} label{'s' * (len(lab) != 1)}, need {max(2, min_labels)}" + \
                (f" ({said})" if said else "")
        else:
            est = ppi_mean(y, f, fu) if fu.size else labels_mean(y)
            # a metric is within [0, 1]: so are its estimate and interval (PPI's rectified mean can overshoot)
            row.update(status="ok", method=est.method, mean=_r(_unit(est.mean)), ci_low=_r(_unit(est.ci_low)),
                       ci_high=_r(_unit(est.ci_high)), lam=_r(est.lam))
        rows.append(row)
    return rows


def unjudged_note(r: dict) -> str | None:
    """The labels of a row that its judge did not measure (they count for no estimate of it), or None."""
    n = r.get("n_labels_unjudged") or 0
    return f"{n} more label{'s' * (n != 1)} on samples this judge did not measure (not counted)" if n else None


def calibration_note(r: dict) -> str:
    """What `ragdoctor summary` says beside a calibrated row: why there is no PPI estimate, or its method and lambda;
    the labels on samples the judge did not measure, whatever the status (the unmeasured reason already counts
    them); then what the agreement left out or could not measure ("3 sample(s) left out: their labellers disagree",
    "all 30 labelled sample(s) ... are disputed", ...)."""
    if r["status"] != "ok":
        parts = [r["reason"]]
    else:
        parts = [(r["method"] or "") + (f", lambda {r['lam']:.2f}" if r.get("lam") is not None else ""),
                 unjudged_note(r)]
    a = r["agreement"]
    if a.get("reason") and (a.get("n") or a.get("n_disputed")):  # n == 0 and none disputed: the reason above says it
        parts.append(a["reason"])
    return "; ".join(p for p in parts if p)


def run_results(run: RunFolder) -> pd.DataFrame:
    """The run's long results table: results.parquet when it is as new as the results log, else the current
    judgements (an evaluation still going or killed)."""
    parquet, log = run.file(RESULTS_TABLE), run.results.path
    if parquet.exists() and run.summary() is not None and \
            (not log.exists() or parquet.stat().st_mtime_ns >= log.stat().st_mtime_ns):
        return pd.read_parquet(parquet, columns=["sample_id", "metric", "judge", "value", "status"])
    from eval.summary import results_frame  # noqa: PLC0415 - eval.summary imports this module

    return results_frame(run.judgements())


def for_run(run: str | Path | RunFolder, *, errors: list[InputError] | None = None, min_labels: int = MIN_LABELS,
            n_resamples: int = 1000) -> list[dict]:
    """calibrate() over a run folder's current results and labels.jsonl, read now (labels added after the evaluation
    count; a bad labels line goes to ``errors``, else is reported, and is skipped)."""
    folder = run if isinstance(run, RunFolder) else RunFolder(run)
    stale: list[Label] = []
    labels = read_labels(folder, errors, stale=stale)
    return calibrate(run_results(folder), labels, min_labels=min_labels, n_resamples=n_resamples, stale=stale)


def find_row(rows: list[dict], metric: str, judge: str) -> dict | None:
    return next((r for r in rows if r["metric"] == metric and r["judge"] == judge), None)


STALE = "labelled an earlier answer of their sample (it changed since; label it again)"


def unjudged_reason(metric: str, missed: list[str], of: list[str]) -> str:
    """Why a label of a measured sample counts for none (or not all) of its metric's judges: they did not measure
    the sample (no claims to check, a judge error, an unmeasured status)."""
    if len(missed) == len(of):
        return f"{metric} on samples no judge measured"
    others = [j for j in of if j not in missed]
    return f"{metric} on samples judge {', '.join(missed)} did not measure (counted for {', '.join(others)} only)"


def uncounted_labels(results: pd.DataFrame, labels: Iterable[Label], run_samples: Iterable[str] = (),
                     stale: Iterable[Label] = ()) -> dict[str, int]:
    """Labels no summary counts, or counts for only some judges, by why (each label once): their sample is not in
    this run, it is (``run_samples``: config.json's) but its judgement could not be read, their metric was not
    measured here, the judges of their metric did not measure their sample (all of them, or those named: the label
    counts for the others), or (``stale``: read_labels' collector) they judged an earlier answer of their sample
    (said, never dropped in silence)."""
    ids, measured, in_run = set(results["sample_id"]), set(results["metric"]), set(run_samples)
    out: dict[str, int] = {STALE: n} if (n := len(list(stale))) else {}
    has_status = {"status", "value", "judge"} <= set(results.columns)
    ok = results[(results["status"] == "ok") & results["value"].notna()] if has_status else results
    judged = set(zip(ok["sample_id"], ok["metric"], ok["judge"])) if has_status else set()
    judges_of = {str(m): sorted(map(str, g["judge"].unique())) for m, g in results.groupby("metric")} \
        if has_status else {}
    for metric, by in human_values(labels).items():
        for sid in by:
            why = ("judgement unreadable or missing (rerun `ragdoctor eval`)" if sid not in ids and sid in in_run else
                   "sample not in this run" if sid not in ids else
                   f"{metric} not measured by this run" if metric not in measured else None)
            if why is None and has_status:
                of = judges_of.get(metric, [])
                missed = [j for j in of if (sid, metric, j) not in judged]
                why = unjudged_reason(metric, missed, of) if missed else None
            if why:
                out[why] = out.get(why, 0) + 1
    return out


def label_counts(results: pd.DataFrame, labels: Iterable[Label]) -> dict[str, int]:
    """metric -> how many of the run's samples carry a label of it."""
    ids = set(results["sample_id"])
    return {m: sum(1 for s in by if s in ids) for m, by in human_values(labels).items()}
