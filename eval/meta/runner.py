"""Run judges on a human-labelled set: one result per (dataset, metric, judge), saved as JSON, per-item scores and a
reliability plot. A judge is measured through its Scorer (support / relevance), the same path the metrics use."""
from __future__ import annotations

import importlib.util
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from eval.judges.base import JudgeUnavailable
from eval.judges.registry import JudgeOptions, make_judge
from eval.meta.datasets import Task, load_tasks
from eval.meta.samples import score_task_samples
from eval.meta.scoring import CountingScorer, Reduce, TaskScores, score_task
from eval.meta.stats import binary_report, graded_report, pairwise_report
from eval.metrics import ScorerJudge

BASELINE = "lexical"
SAMPLE_JUDGES = frozenset({"ragas"})  # score whole metrics, not (premise, hypothesis) pairs: eval/meta/samples.py
_NOT_SCORERS = {
    "labels": "the labels judge computes retrieval metrics from relevance labels: nothing to meta-evaluate",
}


@dataclass
class MetaEvalOptions:
    judges: list[str] = field(default_factory=lambda: ["lexical", "embedding"])
    limit: int | None = None  # seeded subsample of records
    metrics: list[str] | None = None  # only these tasks (None: every task of the set)
    seed: int = 0
    n_resamples: int = 1000
    reduce: Reduce = "min"
    chunk_size: int = 64
    judge_options: JudgeOptions = field(default_factory=JudgeOptions)


def as_scorer_judge(judge: object) -> ScorerJudge:
    """The ScorerJudge behind a built judge, or JudgeUnavailable when it exposes no Scorer."""
    if isinstance(judge, ScorerJudge):
        return judge
    scorer = getattr(judge, "scorer", None)
    if scorer is not None and hasattr(scorer, "support") and hasattr(scorer, "relevance"):
        return ScorerJudge(scorer)
    if hasattr(judge, "support") and hasattr(judge, "relevance"):
        return ScorerJudge(judge)  # type: ignore[arg-type]
    raise JudgeUnavailable(f"{type(judge).__name__} exposes no Scorer (support/relevance)")


def build_judge(name: str, opts: JudgeOptions) -> tuple[ScorerJudge, str]:
    """A counting ScorerJudge for ``name`` (a whole-metric judge, ragas, as built) and its config id;
    JudgeUnavailable when it cannot run here."""
    if name in _NOT_SCORERS:
        raise JudgeUnavailable(_NOT_SCORERS[name])
    if name == "llm" and importlib.util.find_spec("eval.judges.llm_claims") is None:
        raise JudgeUnavailable("the llm claim judge (eval/judges/llm_claims.py) is not in this checkout")
    judge = make_judge(name, opts)
    if name in SAMPLE_JUDGES:
        return judge, getattr(judge, "config_id", name)
    inner = as_scorer_judge(judge)
    inner.scorer.support([("warm-up", "warm-up")])  # loads a lazy model now, so a broken one is 'unavailable'
    return ScorerJudge(CountingScorer(inner.scorer), inner.max_premises), getattr(judge, "config_id", name)


def _report(task: Task, scores: TaskScores, opts: MetaEvalOptions) -> tuple[dict, list[dict]]:
    """Statistics of one task's scores, and the per-item rows; unmeasured items (None) are left out and counted."""
    kw = {"seed": opts.seed, "n_resamples": opts.n_resamples}
    if task.kind == "pairwise":
        keep = [k for k, (g, b) in enumerate(zip(scores.good, scores.bad)) if g is not None and b is not None]
        good = [scores.good[k] for k in keep]
        bad = [scores.bad[k] for k in keep]
        rows = [{"id": task.items[k].id, "good": g, "bad": b} for k, g, b in zip(keep, good, bad)]
        return {**pairwise_report(good, bad, **kw), "n_unmeasured": len(task.items) - len(keep)}, rows
    keep = [k for k, s in enumerate(scores.scores) if s is not None]
    s = [scores.scores[k] for k in keep]
    y = [task.items[k].label for k in keep]
    rows = [{"id": task.items[k].id, "label": lab, "score": sc} for k, lab, sc in zip(keep, y, s)]
    stats = graded_report(s, y, **kw) if task.kind == "graded" else binary_report(s, y, **kw)
    return {**stats, "n_unmeasured": len(task.items) - len(keep)}, rows


def evaluate_task(task: Task, name: str, judge: ScorerJudge, config_id: str,
                  opts: MetaEvalOptions) -> tuple[dict, list[dict]]:
    start = time.perf_counter()
    if name in SAMPLE_JUDGES:  # whole-metric judges are counted in samples, Scorers in (premise, hypothesis) pairs
        scores = score_task_samples(judge, task)
        unit, done, digits = "samples", len(task.items) * (2 if task.kind == "pairwise" else 1), 3
    else:
        counter: CountingScorer = judge.scorer  # type: ignore[assignment]
        before = counter.pairs
        scores = score_task(judge, task, reduce=opts.reduce, chunk_size=opts.chunk_size)
        unit, done, digits = "pairs", counter.pairs - before, 1
    seconds = time.perf_counter() - start
    speed = {f"scored_{unit}": done, f"{unit}_per_second": round(done / seconds, digits) if seconds > 0 else None}
    stats, rows = _report(task, scores, opts)
    head = {"dataset": task.dataset, "metric": task.metric, "label": task.label, "kind": task.kind, "judge": name,
            "config_id": config_id, "seconds": round(seconds, 3), **speed, "flags": []}
    return {**head, **stats}, [{"metric": task.metric, "judge": name, **r} for r in rows]


def headline(result: dict) -> tuple[str, float | None]:
    """The statistic a judge is compared on: pairwise accuracy, else AUROC, else Spearman."""
    for key in ("pairwise_accuracy", "auroc", "spearman"):
        if result.get(key) is not None:
            return key, result[key]
    return "auroc", None


def flag_results(results: list[dict]) -> None:
    """Flag, in place, results that do not beat the lexical baseline and AUROCs whose CI reaches chance (0.5)."""
    base = {r["metric"]: r for r in results if r["judge"] == BASELINE and "error" not in r}
    for r in results:
        if "error" in r:
            continue
        lo, hi = r.get("auroc_ci") or (None, None)
        if lo is not None and lo <= 0.5 <= hi:
            r["flags"].append("AUROC CI includes 0.5 (chance)")
        b = base.get(r["metric"])
        if b is None or r["judge"] == BASELINE:
            continue
        key, value = headline(r)
        ref = b.get(key)
        r["beats_lexical"] = None if value is None or ref is None else value > ref
        if r["beats_lexical"] is False:
            r["flags"].append(f"does not beat lexical ({key} {value:.3f} <= {ref:.3f})")


def run_meta_eval(dataset: str, path: str | Path, opts: MetaEvalOptions,
                  log: Callable[[str], None] | None = None) -> dict:
    """Every task of the dataset under every requested judge; the report dict (see save_report for the files)."""
    log = log or (lambda _msg: None)
    tasks, total = load_tasks(dataset, path, limit=opts.limit, seed=opts.seed)
    tasks = [t for t in tasks if opts.metrics is None or t.metric in opts.metrics]
    n_used = len(tasks[0].items) if tasks else 0
    report: dict = {"dataset": dataset, "path": str(path), "n_records": total, "n_used": n_used,
                    "sample": ({"limit": opts.limit, "seed": opts.seed, "n": n_used, "of": total}
                               if n_used < total else None),
                    "reduce": opts.reduce, "seed": opts.seed, "n_resamples": opts.n_resamples,
                    "judges": [], "results": [], "unavailable": [], "scores": []}
    for name in opts.judges:
        start = time.perf_counter()
        try:
            judge, config_id = build_judge(name, opts.judge_options)
        except Exception as exc:  # JudgeUnavailable, a missing model package, a bad model folder
            reason = str(exc) if isinstance(exc, JudgeUnavailable) else f"{type(exc).__name__}: {exc}"
            report["unavailable"].append({"judge": name, "reason": reason})
            log(f"{name}: unavailable: {reason}")
            continue
        report["judges"].append({"judge": name, "config_id": config_id,
                                 "load_seconds": round(time.perf_counter() - start, 3)})
        for task in tasks:
            log(f"{name}: {dataset}/{task.metric} ({len(task.items)} items)")
            try:
                result, rows = evaluate_task(task, name, judge, config_id, opts)
            except JudgeUnavailable as exc:
                report["unavailable"].append({"judge": name, "reason": str(exc)})
                break
            except Exception as exc:  # a judge failure becomes data, not a crash of the whole run
                result, rows = {"dataset": dataset, "metric": task.metric, "judge": name, "flags": [],
                                "error": f"{type(exc).__name__}: {exc}"}, []
            report["results"].append(result)
            report["scores"].extend(rows)
    flag_results(report["results"])
    return report


def default_out_dir(dataset: str) -> Path:
    return Path("runs") / "meta-eval" / dataset


def save_report(report: dict, out_dir: str | Path) -> dict[str, str]:
    """results.json (everything but the per-item scores), scores.jsonl and reliability.png in ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {"results": str(out / "results.json"), "scores": str(out / "scores.jsonl"),
             "reliability": str(out / "reliability.png")}
    body = {k: v for k, v in report.items() if k != "scores"}
    Path(files["results"]).write_text(json.dumps({**body, "files": files}, indent=2, default=float) + "\n")
    with open(files["scores"], "w", encoding="utf-8") as fh:
        for row in report["scores"]:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    plot_reliability(report["results"], files["reliability"], title=f"{report['dataset']}: reliability")
    return files


def plot_reliability(results: list[dict], path: str | Path, title: str = "reliability") -> None:
    """One panel per metric, one line per judge: positive rate against mean score per bin (diagonal = calibrated)."""
    from matplotlib.figure import Figure  # no pyplot: no global state, no GUI backend (renders with Agg)

    metrics = list(dict.fromkeys(r["metric"] for r in results if r.get("reliability")))
    fig = Figure(figsize=(4.2 * max(1, len(metrics)), 4.2), layout="constrained")
    axes = fig.subplots(1, max(1, len(metrics)), squeeze=False)[0]
    for ax, metric in zip(axes, metrics or ["(no results)"]):
        ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=1)
        for r in (r for r in results if r["metric"] == metric and r.get("reliability")):
            bins = [b for b in r["reliability"] if b["count"]]
            ece = "-" if r.get("ece") is None else f"{r['ece']:.3f}"
            ax.plot([b["mean_score"] for b in bins], [b["positive_rate"] for b in bins], marker="o",
                    label=f"{r['judge']} (ECE {ece})")
        ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="mean score in bin", ylabel="share labelled positive", title=metric)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="lower right", fontsize=8)
    fig.suptitle(title)
    fig.savefig(path, dpi=110)
