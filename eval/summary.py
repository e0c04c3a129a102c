"""Aggregate a run's judgements: per (metric, judge) the mean of measured values with a bootstrap 95% CI,
and the counts and reasons of unmeasured and not-applicable results; with human labels, ``calibrated``: the
PPI-corrected means with their CIs and each judge's agreement with the labels (eval/calibration.py)."""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import pandas as pd

from corpora.records import Judgement, Label
from eval.calibration import calibrate
from eval.mathx import mean_ci
from eval.metrics import find

RESULT_COLUMNS = ("sample_id", "metric", "judge", "value", "status", "reason", "seconds")  # results.parquet's


def results_frame(judgements: list[Judgement]) -> pd.DataFrame:
    """Long table: one row per (sample, metric, judge)."""
    rows = [{"sample_id": j.sample_id, "metric": r.metric, "judge": r.judge, "value": r.value, "status": r.status,
             "reason": r.reason, "seconds": r.seconds} for j in judgements for r in j.results]
    return pd.DataFrame(rows, columns=list(RESULT_COLUMNS))


def _higher_is_better(metric: str) -> bool:
    """The metric's direction (noise_sensitivity: lower is better), as its definition gives it; a name no metric
    defines (a retrieval metric read from a log, say) is higher-is-better, as every retrieval metric is."""
    m = find(metric)
    return True if m is None else m.higher_is_better


def summarize(judgements: list[Judgement], *, n_resamples: int = 2000, seed: int = 0,
              labels: Iterable[Label] | None = None) -> dict:
    """Means with CIs per (metric, judge); with ``labels`` (the labels in force, corpora/labels.py; none: no key) also
    ``calibrated``: one row per (metric, judge) with labels (eval.calibration.calibrate)."""
    df = results_frame(judgements)
    metrics: list[dict] = []
    for (metric, judge), g in df.groupby(["metric", "judge"], sort=False):
        ok = g[g.status == "ok"]["value"].astype(float).tolist()
        lo, hi = mean_ci(ok, n_resamples=n_resamples, seed=seed) if ok else (None, None)
        unmeasured = g[g.status == "unmeasured"]
        metrics.append({
            "metric": metric, "judge": judge, "higher_is_better": _higher_is_better(metric),
            "n": len(ok), "mean": float(sum(ok) / len(ok)) if ok else None,
            "ci_low": lo, "ci_high": hi, "n_unmeasured": int(len(unmeasured)),
            "n_not_applicable": int((g.status == "not_applicable").sum()),
            "unmeasured_reasons": dict(Counter(unmeasured["reason"].fillna("unknown")).most_common(5)),
        })
    decided = int((df.status != "not_applicable").sum())
    out = {"n_samples": len(judgements), "metrics": metrics,
           "unmeasured_share": float((df.status == "unmeasured").sum() / decided) if decided else None}
    labels = list(labels or [])
    if labels:  # without labels the summary is as it always was
        out["calibrated"] = calibrate(df, labels, seed=seed)
    return out

