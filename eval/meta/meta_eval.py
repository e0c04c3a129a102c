"""Run judges on a human-labelled set: one result per (dataset, metric, judge), saved as JSON, per-item scores and a
reliability plot. A judge is measured through its Scorer (support / relevance), the same path the metrics use."""
from __future__ import annotations

import importlib.util
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from corpora.errors import UsageError
from eval.judges.base import JudgeUnavailable
from eval.judges.registry import JudgeOptions, make_judge
from eval.meta.datasets import Task, load_tasks
from eval.meta.samples import score_task_samples
from eval.meta.scoring import CountingScorer, Reduce, Tally, TaskScores, score_task
from eval.meta.stats import (above, binary_report, graded_report, paired_difference, pairs_units, pairwise_outcomes,
                             pairwise_report, resampled_auroc, smaller_class, spearman)
from eval.judges.scorer import ScorerJudge

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
    # further nli judges, each from its own folder, measured beside the others: judge label ('nli:<name>') -> folder
    # (e.g. the previous judge, or one just trained, next to the shipped one in the same table)
    nli_variants: dict[str, str] = field(default_factory=dict)


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
        return judge, judge.config_id
    inner = as_scorer_judge(judge)
    inner.scorer.support([("warm-up", "warm-up")])  # loads a lazy model now, so a broken one is 'unavailable'
    # what the judge cannot read stays unmeasured, as in eval (scoring.unmeasurable), not scored as if it could
    return ScorerJudge(CountingScorer(inner.scorer), inner.max_premises, unreadable=inner.unreadable), judge.config_id


GroupKey = tuple[str, str]


def group_key(group: str | int | None, item_id: str) -> GroupKey:
    """The bootstrap's (and the dev/test split's) unit: the group (a shared source document), else the item itself;
    tagged, so a user's group spelled like an item's own key ("id:r0") stays a different unit. A group is compared as
    text: 1 and "1" are one group, as 7 and "7" are one id (a file converted from CSV mixes them); None or "" is no
    group."""
    return ("item", item_id) if group is None or group == "" else ("group", str(group))


def group_of(item) -> GroupKey:
    return group_key(item.group, item.id)


def group_as_given(item) -> str | int | None:
    """The item's group as its file wrote it (an integer stays one), None without a group: scores.jsonl's."""
    return None if item.group == "" else item.group


NO_CLAIMS = "no claims or no text to check"


def unmeasured_reasons(scores: TaskScores, left_out: list[int]) -> dict[str, int]:
    """How many of the items ``left_out`` (indices) were left out for each reason, the most frequent first."""
    counts: dict[str, int] = {}
    for k in left_out:
        why = scores.why.get(k, NO_CLAIMS)
        counts[why] = counts.get(why, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def _report(task: Task, scores: TaskScores, opts: MetaEvalOptions) -> tuple[dict, list[dict]]:
    """Statistics of one task's scores, and the per-item rows; unmeasured items (None) are left out and counted, by
    reason (``unmeasured_reasons``)."""
    kw = {"seed": opts.seed, "n_resamples": opts.n_resamples}
    if task.kind == "pairwise":
        keep = [k for k, (g, b) in enumerate(zip(scores.good, scores.bad)) if g is not None and b is not None]
        good = [scores.good[k] for k in keep]
        bad = [scores.bad[k] for k in keep]
        groups = [group_of(task.items[k]) for k in keep]
        rows = [{"id": task.items[k].id, "group": group_as_given(task.items[k]), "good": g, "bad": b}
                for k, g, b in zip(keep, good, bad)]
        out = sorted(set(range(len(task.items))) - set(keep))
        return {**pairwise_report(good, bad, groups=groups, **kw), "n_unmeasured": len(out),
                "unmeasured_reasons": unmeasured_reasons(scores, out), "n_groups": len(set(groups))}, rows
    keep = [k for k, s in enumerate(scores.scores) if s is not None]
    s = [scores.scores[k] for k in keep]
    y = [task.items[k].label for k in keep]
    groups = [group_of(task.items[k]) for k in keep]
    rows = [{"id": task.items[k].id, "group": group_as_given(task.items[k]), "label": lab, "score": sc}
            for k, lab, sc in zip(keep, y, s)]
    report = graded_report if task.kind == "graded" else binary_report
    out = sorted(set(range(len(task.items))) - set(keep))
    return {**report(s, y, groups=groups, **kw), "n_unmeasured": len(out),
            "unmeasured_reasons": unmeasured_reasons(scores, out), "n_groups": len(set(groups))}, rows


def evaluate_task(task: Task, name: str, judge: ScorerJudge, config_id: str,
                  opts: MetaEvalOptions) -> tuple[dict, list[dict]]:
    start = time.perf_counter()
    if name in SAMPLE_JUDGES:  # whole-metric judges are counted in samples, Scorers in (premise, hypothesis) pairs
        scores = score_task_samples(judge, task)
        unit, done, digits = "samples", len(task.items) * (2 if task.kind == "pairwise" else 1), 3
    else:
        counter: CountingScorer = judge.scorer  # type: ignore[assignment]
        before = counter.tally()
        scores = score_task(judge, task, reduce=opts.reduce, chunk_size=opts.chunk_size)
        tally = counter.tally() - before
        unit, done, digits = "pairs", tally.pairs, 1
    seconds = time.perf_counter() - start
    speed = {f"scored_{unit}": done, f"{unit}_per_second": round(done / seconds, digits) if seconds > 0 else None}
    if unit == "pairs" and counter.can_count_truncation:  # evidence the model never saw (cut at its max length)
        speed.update(truncation_fields(tally))
    stats, rows = _report(task, scores, opts)
    head = {"dataset": task.dataset, "metric": task.metric, "label": task.label, "kind": task.kind, "judge": name,
            "config_id": config_id, "seconds": round(seconds, 3), **speed, "flags": []}
    return {**head, **stats}, [{"metric": task.metric, "judge": name, **r} for r in rows]


def truncation_fields(tally: Tally) -> dict:
    """The share of the model's (premise, hypothesis) inputs longer than it reads, over the inputs it really read
    (a passage's relevance windows, a claim's evidence windows); None with the reason when some were not counted."""
    if tally.unchecked:
        return {"truncated_pairs": None, "truncated_share": None, "model_pairs": None,
                "truncated_reason": f"not counted: {tally.unchecked} scored pairs reach a model whose inputs this "
                                    "scorer does not expose"}
    if not tally.checked:
        return {"truncated_pairs": 0, "truncated_share": None, "model_pairs": 0,
                "truncated_reason": "the model read no pairs"}
    return {"truncated_pairs": tally.truncated, "truncated_share": round(tally.truncated / tally.checked, 4),
            "model_pairs": tally.checked}


def headline(result: dict) -> tuple[str, float | None]:
    """The statistic a judge is compared on: pairwise accuracy, else AUROC, else Spearman."""
    for key in ("pairwise_accuracy", "auroc", "spearman"):
        if result.get(key) is not None:
            return key, result[key]
    return "auroc", None


def _say_unmeasured(r: dict) -> None:
    """What a result could not measure, in its flags (and ``unmeasured``: the reason its headline statistic is None),
    never a row of dashes without a word: items left out, one label class, too few units for a CI."""
    measured = r.get("n_graded", r.get("n"))
    key, value = headline(r)
    why = r.get("why_none") or {}
    reasons = r.get("unmeasured_reasons") or {NO_CLAIMS: r.get("n_unmeasured")}
    said = "; ".join(why if len(reasons) == 1 else f"{n}: {why}" for why, n in list(reasons.items())[:3])
    said += f"; {len(reasons) - 3} more reasons (unmeasured_reasons in results.json)" if len(reasons) > 3 else ""
    if r.get("n_unmeasured") and measured is not None:
        r["flags"].append(f"{r['n_unmeasured']} of {measured + r['n_unmeasured']} items unmeasured ({said}): left "
                          "out")
    if value is None:
        reason = (f"every item unmeasured ({said})" if not measured else
                  "every graded label, or every score, is the same (Spearman needs two)" if r["kind"] == "graded" else
                  "every item has the same label (AUROC needs both classes)")
        r["unmeasured"] = reason
        r["flags"].append(f"unmeasured: {reason}")
    elif not (r.get(f"{key}_ci") and r[f"{key}_ci"][0] is not None):
        r["flags"].append(f"no CI for {key}: {why.get(f'{key}_ci', 'too few records or groups to resample')}")


CHANCE = {"pairwise_accuracy": ("pairwise accuracy", 0.5), "auroc": ("AUROC", 0.5), "spearman": ("Spearman", 0.0)}


def chance_flag(key: str, ci: tuple | list | None) -> str | None:
    """The flag of a headline statistic whose CI lies wholly below chance (the scores inverted) or reaches it."""
    name, chance = CHANCE[key]
    lo, hi = ci or (None, None)
    if lo is None or hi is None:
        return None
    if above(chance, hi):  # below chance by more than float noise
        return f"worse than chance ({name} CI below {chance:g}): the judge's scores are inverted here"
    return None if above(lo, chance) else f"{name} CI includes {chance:g} (chance)"


def _paired(task_rows: dict, judge: str, statistic: str, opts: MetaEvalOptions) -> dict:
    """The judge's headline ``statistic`` (pairwise_accuracy, auroc or spearman) minus lexical's on the items both
    measured, with a paired (clustered) bootstrap CI of the difference."""
    mine = {r["id"]: r for r in task_rows.get(judge, [])}
    base = {r["id"]: r for r in task_rows.get(BASELINE, [])}
    ids = [i for i in mine if i in base]
    groups = [group_key(mine[i]["group"], i) for i in ids]
    kw = {"n_resamples": opts.n_resamples, "seed": opts.seed, "groups": groups, "refuse_zero_width": True}
    if statistic == "pairwise_accuracy":
        def acc(rows):
            out = pairwise_outcomes([r["good"] for r in rows], [r["bad"] for r in rows])
            return lambda idx: float(out[idx].mean()) if idx.size else None
        res = paired_difference(acc([mine[i] for i in ids]), acc([base[i] for i in ids]), len(ids),
                                wilson_n=pairs_units(len(ids), groups), **kw)
        return {"statistic": "pairwise_accuracy", "n": len(ids), **res}
    if statistic == "auroc":  # AUROC reads the records labelled exactly 0 or 1 (all of them, but for graded labels)
        ids = [i for i in ids if mine[i]["label"] in (0.0, 1.0)]
    groups = [group_key(mine[i]["group"], i) for i in ids]
    y = np.array([mine[i]["label"] for i in ids])
    a = np.array([mine[i]["score"] for i in ids])
    b = np.array([base[i]["score"] for i in ids])
    if statistic == "auroc":
        stat_a, stat_b = resampled_auroc(a, y, groups), resampled_auroc(b, y, groups)
    else:
        stat_a, stat_b = (lambda idx: spearman(a[idx], y[idx])), (lambda idx: spearman(b[idx], y[idx]))
    wilson = smaller_class(y, groups) if statistic == "auroc" else None  # Spearman is no proportion
    res = paired_difference(stat_a, stat_b, len(ids), **{**kw, "groups": groups}, wilson_n=wilson)
    return {"statistic": statistic, "n": len(ids), **res}


def flag_results(results: list[dict], rows: list[dict] | None = None, opts: MetaEvalOptions | None = None) -> None:
    """Flag, in place: a headline statistic (pairwise accuracy, else AUROC, else Spearman: ``headline``) whose CI
    reaches chance or lies wholly below it (an inverted judge), a threshold that puts every test item in one class,
    and the comparison of the same statistic with the lexical baseline on the same items: 'beats' only when the CI
    of the paired difference lies above 0 ('ties' when it straddles 0)."""
    opts = opts or MetaEvalOptions()
    by_task: dict[str, dict[str, list[dict]]] = {}
    for row in rows or []:
        by_task.setdefault(row["metric"], {}).setdefault(row["judge"], []).append(row)
    have_base = {r["metric"] for r in results if r["judge"] == BASELINE and "error" not in r}
    for r in results:
        if "error" in r:
            continue
        _say_unmeasured(r)
        key, _ = headline(r)
        if (chance := chance_flag(key, r.get(f"{key}_ci"))) is not None:
            r["flags"].append(chance)
        if r.get("one_class_threshold"):
            r["flags"].append("degenerate threshold: every test item falls in one class")
        if r["judge"] == BASELINE or r["metric"] not in have_base or r["metric"] not in by_task:
            continue
        cmp = _paired(by_task[r["metric"]], r["judge"], key, opts)
        r["vs_lexical"] = cmp
        r["beats_lexical"] = None if cmp["verdict"] is None else cmp["verdict"] == "beats"
        if cmp["verdict"] is not None:
            lo_d, hi_d = cmp["ci"]
            how = f"; {cmp['note']}" if cmp.get("note") else ""
            r["flags"].append(f"{cmp['verdict']} lexical ({cmp['statistic']} {cmp['difference']:+.3f}, "
                              f"95% CI {lo_d:+.3f} to {hi_d:+.3f}{how})")


def run_meta_eval(dataset: str, path: str | Path, opts: MetaEvalOptions,
                  log: Callable[[str], None] | None = None, records: list | None = None) -> dict:
    """Every task of the dataset under every requested judge; the report dict (see save_report for the files).
    ``records``: the file's records when already read (then it is not read again)."""
    tasks, total = load_tasks(dataset, path, limit=opts.limit, seed=opts.seed, records=records)
    return run_tasks(dataset, str(path), tasks, total, opts, log)


def run_tasks(dataset: str, path: str, tasks: list[Task], total: int, opts: MetaEvalOptions,
              log: Callable[[str], None] | None = None) -> dict:
    """Every task under every requested judge (tasks may come from any source: a labelled file, the held-out
    slices of the training pool)."""
    log = log or (lambda _msg: None)
    have = list(dict.fromkeys(t.metric.split("/")[0] for t in tasks))
    tasks = [t for t in tasks if opts.metrics is None or t.metric.split("/")[0] in opts.metrics]
    if opts.metrics and not tasks:  # before any judge is built: no judge failed, the data has no such task
        raise UsageError(f"--metric {', '.join(opts.metrics)}: {dataset} has no such task (it has "
                         f"{', '.join(have) or 'none'})")
    n_used = len(tasks[0].items) if tasks else 0
    report: dict = {"dataset": dataset, "path": str(path), "n_records": total, "n_used": n_used,
                    "sample": ({"limit": opts.limit, "seed": opts.seed, "n": n_used, "of": total}
                               if n_used < total else None),
                    "reduce": opts.reduce, "seed": opts.seed, "n_resamples": opts.n_resamples,
                    "judges": [], "results": [], "unavailable": [], "scores": []}
    for name in opts.judges:
        start = time.perf_counter()
        try:
            if name in opts.nli_variants:
                judge, config_id = build_judge("nli", replace(opts.judge_options, nli_model=opts.nli_variants[name]))
            else:
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
    flag_results(report["results"], report["scores"], opts)
    report["worst_source"] = worst_source(report["results"])
    return report


def worst_source(results: list[dict]) -> dict:
    """For task names 'metric/source' (a suite of sources): per judge and metric, the lowest headline statistic
    over sources, and which source it is (pick judges by this, never by the pooled average)."""
    out: dict[str, dict] = {}
    for r in results:
        if "/" not in r["metric"] or "error" in r:
            continue
        metric, source = r["metric"].split("/", 1)
        _, value = headline(r)
        cell = out.setdefault(f"{metric}:{r['judge']}", {"metric": metric, "judge": r["judge"], "min": None})
        if value is not None and (cell["min"] is None or value < cell["min"]):
            cell.update({"min": round(value, 4), "source": source})
    return out


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
