"""Comparing two runs for the dashboard's Compare page: per-metric deltas with paired or unpaired CIs, the samples
whose category changed, and the PPI-corrected means side by side (each run loaded by ``data.load_run``)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from eval.mathx import MIN_BOOTSTRAP, difference_ci
from ragdoctor.dashboard.data import Run


def _unpaired_ci(a: np.ndarray, b: np.ndarray, n_resamples: int, seed: int = 0) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    ma = a[rng.integers(0, a.size, size=(n_resamples, a.size))].mean(axis=1)
    mb = b[rng.integers(0, b.size, size=(n_resamples, b.size))].mean(axis=1)
    lo, hi = np.quantile(mb - ma, [0.025, 0.975])
    return float(lo), float(hi)


def compare_metrics(a: Run, b: Run, n_resamples: int = 1000) -> pd.DataFrame:
    """Per (metric, judge): each run's mean and 95% CI (summary.json) and the delta B - A with its 95% CI, and in
    ``ci`` which CI: "paired" (a paired bootstrap over the MIN_BOOTSTRAP or more samples both runs measured),
    "unpaired" (fewer shared: each run resampled on its own), or "none" (too few samples: no CI, no verdict, and the
    change says "too few samples", never "within noise"). Regressions (CI wholly below 0) first."""
    sa = {(m["metric"], m["judge"]): m for m in (a.summary or {}).get("metrics", [])}
    sb = {(m["metric"], m["judge"]): m for m in (b.summary or {}).get("metrics", [])}

    def values(run: Run) -> pd.DataFrame:
        ok = run.results[run.results["status"] == "ok"]
        return ok.pivot_table(index="sample_id", columns=["metric", "judge"], values="value", aggfunc="last")

    va, vb = values(a), values(b)
    rows = []
    for key in list(dict.fromkeys([*sa, *sb])):
        ma, mb = sa.get(key), sb.get(key)
        row: dict[str, Any] = {"metric": key[0], "judge": key[1]}
        for tag, m in (("a", ma), ("b", mb)):
            row.update({f"n_{tag}": m["n"] if m else None, f"mean_{tag}": m["mean"] if m else None,
                        f"ci_low_{tag}": m["ci_low"] if m else None, f"ci_high_{tag}": m["ci_high"] if m else None})
        row.update({"delta": None, "delta_ci_low": None, "delta_ci_high": None, "n_paired": 0, "ci": "",
                    "change": ""})
        if ma and mb and ma["mean"] is not None and mb["mean"] is not None:
            row["delta"] = mb["mean"] - ma["mean"]
            xa = va[key].dropna() if key in va else pd.Series(dtype=float)
            xb = vb[key].dropna() if key in vb else pd.Series(dtype=float)
            common = xa.index.intersection(xb.index)
            if len(common) >= MIN_BOOTSTRAP:
                diffs = (xb[common] - xa[common]).to_numpy()
                row["delta"] = float(diffs.mean())  # over the samples its CI resamples, never outside it
                lo, hi = difference_ci(diffs.tolist(), n_resamples=n_resamples)
                row["n_paired"], row["ci"] = len(common), "paired"
            elif min(len(xa), len(xb)) >= MIN_BOOTSTRAP:
                lo, hi = _unpaired_ci(xa.to_numpy(), xb.to_numpy(), n_resamples)
                row["ci"] = "unpaired"
            else:  # a handful of samples: no interval, so no regression or improvement is claimed
                lo = hi = None  # type: ignore[assignment]
                row["ci"] = "none"
            row["delta_ci_low"], row["delta_ci_high"] = lo, hi
            row["change"] = ("too few samples" if lo is None or hi is None else "regression" if hi < 0 else
                             "improvement" if lo > 0 else "within noise")
        elif ma and mb:  # in both runs' summaries, unmeasured in one of them (or both)
            row["change"] = ("unmeasured in both" if ma["mean"] is None and mb["mean"] is None else
                             "unmeasured in B" if mb["mean"] is None else "unmeasured in A")
        else:
            row["change"] = "only in A" if ma else "only in B"
        rows.append(row)
    df = pd.DataFrame(rows)
    if not len(df):
        return df
    rank = {"regression": 0, "within noise": 1, "improvement": 2, "too few samples": 3, "unmeasured in A": 3,
            "unmeasured in B": 3, "unmeasured in both": 3, "only in A": 4, "only in B": 5}
    df["_r"] = df["change"].map(rank)
    df["_d"] = df["delta"].astype(float).fillna(0.0)
    return df.sort_values(["_r", "_d", "metric", "judge"]).drop(columns=["_r", "_d"]).reset_index(drop=True)


def changed_samples(a: Run, b: Run) -> pd.DataFrame:
    """Samples in both runs whose category changed: regressions (ok -> a failure) first, then failures that changed
    kind, then fixes, then "unmeasured" (either run could not tell: no verdict, so neither a regression nor a fix);
    with the preferred judges' groundedness and correctness before and after."""
    cols = ["sample_id", "change", "category_a", "category_b", "question"]
    sa, sb = a.samples.set_index("sample_id"), b.samples.set_index("sample_id")
    common = sa.index.intersection(sb.index)
    if not len(common) or "category" not in sa or "category" not in sb:
        return pd.DataFrame(columns=cols)
    ca, cb = sa.loc[common, "category"], sb.loc[common, "category"]
    moved = common[(ca != cb).to_numpy() & ca.notna().to_numpy() & cb.notna().to_numpy()]
    df = pd.DataFrame({"sample_id": moved, "category_a": ca[moved].to_numpy(), "category_b": cb[moved].to_numpy(),
                       "question": sb.loc[moved, "question"].to_numpy()})
    # unmeasured on either side is no verdict (e.g. B evaluated groundedness alone): neither a regression nor a fix
    unknown = (df["category_a"] == "unmeasured") | (df["category_b"] == "unmeasured")
    df["change"] = np.where(unknown, "unmeasured", np.where(df["category_a"] == "ok", "regression",
                                                            np.where(df["category_b"] == "ok", "fix", "changed")))
    extra = []
    for m in ("groundedness", "answer_correctness"):
        if m in sa and m in sb:
            df[f"{m}_a"] = sa.loc[moved, m].to_numpy()
            df[f"{m}_b"] = sb.loc[moved, m].to_numpy()
            extra += [f"{m}_a", f"{m}_b"]
    rank = {"regression": 0, "changed": 1, "fix": 2, "unmeasured": 3}
    df["_r"] = df["change"].map(rank)
    sort = ["_r"] + (["answer_correctness_b"] if "answer_correctness_b" in df else []) + ["sample_id"]
    df = df.sort_values(sort).drop(columns=["_r"]).reset_index(drop=True)
    return df[cols + extra]


def compare_runs(a: Run, b: Run, n_resamples: int = 1000) -> dict:
    """Metric deltas with CIs, samples whose category changed, and the samples only one run has."""
    ia, ib = set(a.sample_ids), set(b.sample_ids)
    return {"metrics": compare_metrics(a, b, n_resamples), "changed": changed_samples(a, b),
            "only_a": sorted(ia - ib), "only_b": sorted(ib - ia), "common": len(ia & ib)}


def compare_calibrated(a: list[dict], b: list[dict]) -> pd.DataFrame:
    """Per (metric, judge) both runs have a PPI-corrected mean for: each run's judge mean and corrected mean with its
    95% CI, and the corrected delta B - A with a normal 95% CI from the two intervals (read as independent: when the
    runs share questions the true interval is usually narrower, so this one is conservative)."""
    cols = ["metric", "judge", "labels_a", "judge_mean_a", "ppi_a", "ppi_ci_low_a", "ppi_ci_high_a", "labels_b",
            "judge_mean_b", "ppi_b", "ppi_ci_low_b", "ppi_ci_high_b", "ppi_delta", "ppi_delta_ci_low",
            "ppi_delta_ci_high", "change"]
    ib = {(r["metric"], r["judge"]): r for r in b if r["status"] == "ok"}
    rows = []
    for ra in a:
        rb = ib.get((ra["metric"], ra["judge"]))
        if ra["status"] != "ok" or rb is None:
            continue
        half = (((ra["ci_high"] - ra["ci_low"]) / 2) ** 2 + ((rb["ci_high"] - rb["ci_low"]) / 2) ** 2) ** 0.5
        delta = rb["mean"] - ra["mean"]
        lo, hi = delta - half, delta + half
        rows.append([ra["metric"], ra["judge"], ra["n_labels"], ra["judge_mean"], ra["mean"], ra["ci_low"],
                     ra["ci_high"], rb["n_labels"], rb["judge_mean"], rb["mean"], rb["ci_low"], rb["ci_high"], delta,
                     lo, hi, "regression" if hi < 0 else "improvement" if lo > 0 else "within noise"])
    return pd.DataFrame(rows, columns=cols)
