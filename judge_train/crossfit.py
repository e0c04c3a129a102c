"""Cross-fitted combiner features: every held-out record scored by a support model that never trained on its source.

A combiner fit on held-out records of the sources the cross-encoder trained on learns how far to trust it *in
distribution*, where a fine-tuned model looks better than it is on a kind of text it has never seen (the human-labelled
sets a user brings). Cross-fitting fixes that: the claim-level sources are split into folds, one support model is
trained per fold without that fold's sources (same recipe otherwise), and each held-out record of a left-out source
gets its features from the fold model that never saw it. The combiner's weights and its features are then chosen on
scores that behave like scores on new data, so where the cross-encoder transfers badly the combiner leans on the
overlap features instead (issue 11: "if the model adds nothing there, it must learn to defer").

Which sources a fold model saw is read from its own records (training_config.json of the stage and of the stages it
started from), never given by hand. A source every fold saw (the general-NLI sets sit in every fold's base stage) is
scored by the full model, as before.

``judge crossfit-report`` on a pool whose report half holds no source with records of both labels refuses (nothing
to measure: exit 2, before any model loads); a value it cannot measure is None with its reason under "unmeasured".
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from corpora.errors import InputError, UsageError
from corpora.jsonl import read_json_object
from judge_train.stage_files import stage_chain
from judge_train.combine import ClaimRows, claim_rows
from judge_train.data import PoolRecord

Log = Callable[[str], None]


def trained_sources(stage: Path) -> set[str]:
    """The pool sources a stage (and every stage it started from) trained on: those with a cap above 0. A weight mix
    (judge interpolate) has seen its base's sources too: from its record, or from the base's folder when it is here;
    InputError when neither says and the base is not the stage the mix's recipe started from."""
    seen: set[str] = set()
    for folder, recipe in stage_chain(stage):
        seen |= {s for s, cap in recipe["data"].get("cap_per_label", {}).items() if cap and cap > 0}
        mix = read_json_object(folder / "training_config.json").get("interpolated")
        if not isinstance(mix, dict):
            continue
        if isinstance(mix.get("base_sources"), list):
            seen |= {str(s) for s in mix["base_sources"]}
        elif Path(str(mix.get("base", ""))).joinpath("training_config.json").is_file():
            seen |= trained_sources(Path(mix["base"]))
        elif str(mix.get("base")) != recipe["base_model"]:  # the chain walked above covers that base
            raise InputError(folder / "training_config.json", f"the mix's base {mix.get('base')} is not here and its "
                             f"record does not list the sources it trained on", field="interpolated.base")
    return seen


def origin_sources(records: Sequence[PoolRecord], pool: Sequence[PoolRecord] = ()) -> list[frozenset[str] | None]:
    """Each record's pool source(s). A synthetic record is made from records of real sources and takes theirs, found by
    group among ``records`` and ``pool`` (the records it may have been made from, when a sample left them out):
    swapped claims ('<group>:orig' / ':swap') and buried evidence ('<group>') one, joined claims ('<group>+<group>')
    two. None when an origin is found in neither: no fold can be known never to have seen it."""
    by_group = {r.group: r.source for r in [*pool, *records] if not r.source.startswith("synthetic_")}
    out: list[frozenset[str] | None] = []
    for r in records:
        if not r.source.startswith("synthetic_"):
            out.append(frozenset({r.source}))
            continue
        groups = [g.removesuffix(":orig").removesuffix(":swap") for g in r.group.split("+")]
        found = [by_group.get(g) for g in groups]
        out.append(None if None in found else frozenset(s for s in found if s is not None))
    return out


def assign_folds(records: Sequence[PoolRecord], folds: Sequence[set[str]], pool: Sequence[PoolRecord] = ()
                 ) -> list[int]:
    """Per record, the index of the first fold model that never trained on its (origin) sources, or -1 (the full
    model) when every fold saw one of them or its origin is unknown."""
    return [-1 if src is None else next((k for k, seen in enumerate(folds) if not (src & seen)), -1)
            for src in origin_sources(records, pool)]


def merge_rows(parts: Sequence[tuple[np.ndarray, ClaimRows]], n_records: int) -> ClaimRows:
    """One ClaimRows over all records from per-scorer ClaimRows, each over the subset ``idx`` (record indices into the
    full list), in record order."""
    xs, owners = [], []
    label = np.zeros(n_records, dtype=int)
    source: list[str] = [""] * n_records
    group: list[str] = [""] * n_records
    signs: tuple[int, ...] = ()
    for idx, rows in parts:
        xs.append(rows.x)
        owners.append(idx[rows.record])
        label[idx] = rows.label
        for j, i in enumerate(idx):
            source[i], group[i] = rows.source[j], rows.group[j]
        signs = signs or rows.signs
    x = np.concatenate(xs) if xs else np.zeros((0, 0))
    owner = np.concatenate(owners) if owners else np.zeros(0, dtype=int)
    order = np.argsort(owner, kind="stable")
    return ClaimRows(x[order], owner[order], label, source, group, signs)


def cross_fitted_rows(full, fold_scorers: Sequence[tuple[object, set[str]]], records: Sequence[PoolRecord],
                      log: Log, pool: Sequence[PoolRecord] = (), *,
                      folds: Sequence[int] | None = None) -> tuple[ClaimRows, dict]:
    """Feature rows of ``records``, each from the fold scorer that never trained on its source (the full scorer where
    every fold did), and the count of records each scorer gave; ``pool``: see origin_sources; ``folds``: the
    records' assign_folds when the caller has it (computed here otherwise)."""
    fold_of = np.asarray(assign_folds(records, [seen for _, seen in fold_scorers], pool) if folds is None else folds)
    parts, counts = [], {}
    for k, scorer in [(-1, full), *enumerate(s for s, _ in fold_scorers)]:
        idx = np.flatnonzero(fold_of == k)
        counts["full" if k < 0 else f"fold{k}"] = int(idx.size)
        if idx.size:
            log(f"  cross-fit: {idx.size} records scored by {'the full model' if k < 0 else f'fold model {k}'}")
            parts.append((idx, claim_rows(scorer, [records[i] for i in idx], log)))
    return merge_rows(parts, len(records)), counts


def fold_name(stage: Path) -> str:
    """A fold model's recipe name (its folder's name when it has no records)."""
    return next((recipe["recipe"] for _, recipe in stage_chain(stage)), stage.name)


def cross_fitted_report(judge: Path, cross_fit: Sequence[Path], data_dir: str, *, per_label: int = 150,
                        seed: int = 0, percent: int | None = None, log: Log = print) -> dict:
    """How a judge folder's support combiner does on sources its cross-encoder never saw: the report half of the
    held-out slice (the sample ``meta-eval --dataset pool`` scores, judge_train/suite.py), each record scored by a
    fold model that never trained on its source, AUROC per source (min over claims) of the lexical feature
    (``lexical_win``), the cross-encoder alone and the combiner, and the smallest lead of each over lexical among the
    sources with enough records. The comparison recipes are chosen by (issue 11): the in-distribution slice rewards a
    model for what it memorised. UsageError before any model loads when the report half holds no source with records
    of both labels; every None of the report has its reason under "unmeasured" (a source's under its own)."""
    from eval.judges.nli import CompactJudgeScorer
    from judge_train.combine import _predict, eligible_sources, per_source_auroc, record_min, worst_margin
    from judge_train.suite import HELDOUT_PERCENT, support_pool, support_report_records

    pct = HELDOUT_PERCENT if percent is None else percent
    pool = support_pool(data_dir)  # the report samples each source: a synthetic record's origin may be left out of it
    records = support_report_records(data_dir, per_label, seed, pct, support=pool)
    if not records:  # report_records keeps only the sources with records of both labels
        raise UsageError(f"nothing to report: the report half of the pool's held-out slice ({pct}% of each source's "
                         f"groups) in {data_dir} holds no source with records of both labels (an AUROC needs both); "
                         "give a bigger pool (--data-dir)")
    full = CompactJudgeScorer(judge, combiner={})
    folds = [(CompactJudgeScorer(judge, combiner={}, support=f), trained_sources(f)) for f in cross_fit]
    names = [fold_name(f) for f in cross_fit]
    log(f"cross-fitted report: {len(records)} records of the report half, {len(folds)} fold models")
    fold_of = assign_folds(records, [seen for _, seen in folds], pool)  # once: it reads the whole support pool
    rows, counts = cross_fitted_rows(full, folds, records, log, pool, folds=fold_of)
    spec = read_json_object(judge / "combiner.json")["support"]
    features = list(full.support_features)
    n = len(rows.label)
    scores = {"lexical_win": record_min(rows.x[:, features.index("lexical_win")], rows.record, n),
              "ce_max": record_min(rows.x[:, features.index("ce_max")], rows.record, n),
              "combiner": record_min(_predict(spec, rows.x[:, [features.index(f) for f in spec["features"]]]),
                                     rows.record, n)}
    whys: dict[str, dict[str, str]] = {k: {} for k in scores}
    per = {k: per_source_auroc(v, rows, why=whys[k]) for k, v in scores.items()}
    ok = eligible_sources(rows)
    scorer_of = ["full model" if k < 0 else names[k] for k in fold_of]
    per_source = {s: {"n": rows.source.count(s), "enough_records": s in ok,
                      "scored_by": sorted({scorer_of[i] for i, src in enumerate(rows.source) if src == s}),
                      **{k: per[k][s] for k in scores}} for s in sorted(set(rows.source))}
    for s, row in per_source.items():  # a reason all three share (one label) said once, else each with its name
        by_kind = {k: whys[k][s] for k in scores if s in whys[k]}
        if by_kind:
            same = len(by_kind) == len(scores) and len(set(by_kind.values())) == 1
            row["unmeasured"] = (next(iter(by_kind.values())) if same else
                                 "; ".join(f"{k}: {v}" for k, v in by_kind.items()))
    lexical = {s: v for s, v in per["lexical_win"].items() if s in ok}
    leads = {k: worst_margin({s: v for s, v in per[k].items() if s in ok}, lexical) for k in ("ce_max", "combiner")}
    unmeasured = {f"worst_source.{k}": whys[k]["min"] for k in scores if per[k]["min"] is None}
    unmeasured |= {f"smallest_lead_over_lexical.{k}": (whys[k].get("min") or whys["lexical_win"].get("min") or
                                                        "no source with enough records has both AUROCs")
                   for k, v in leads.items() if v is None}
    report = {"judge": str(judge), "combiner_features": spec["features"], "per_label": per_label, "seed": seed,
              "folds": {name: sorted(seen) for name, (_, seen) in zip(names, folds)},
              "records_scored_by": counts, "per_source": per_source,
              "worst_source": {k: per[k]["min"] for k in scores}, "smallest_lead_over_lexical": leads}
    if unmeasured:
        report["unmeasured"] = unmeasured
    return report


def fmt(v: float | None, sign: bool = False) -> str:
    """A table cell: the value, or 'unmeasured' (its reason is said beside the table)."""
    return "unmeasured" if v is None else f"{v:+.3f}" if sign else f"{v:.3f}"


def report_table(report: dict) -> list[str]:
    """The cross-fitted report as a markdown table."""
    rows = ["| source (report half) | n | scored by | lexical (unigram, best window) | cross-encoder alone | combiner |",
            "|---|---|---|---|---|---|"]
    for s, r in report["per_source"].items():
        name = s if r["enough_records"] else f"{s} (too few records to decide)"
        rows.append(f"| {name} | {r['n']} | {', '.join(r['scored_by'])} | {fmt(r['lexical_win'])} | "
                    f"{fmt(r['ce_max'])} | {fmt(r['combiner'])} |")
    w, lead = report["worst_source"], report["smallest_lead_over_lexical"]
    rows.append(f"| **worst source** | | | {fmt(w['lexical_win'])} | {fmt(w['ce_max'])} | {fmt(w['combiner'])} |")
    rows.append(f"| **smallest lead over lexical** | | | | {fmt(lead['ce_max'], True)} | {fmt(lead['combiner'], True)} |")
    return rows


def report_notes(report: dict) -> list[str]:
    """The reason of every 'unmeasured' cell of report_table, one line per reason (naming the cells it is for)."""
    said: dict[str, list[str]] = {}
    for s, r in report["per_source"].items():
        if r.get("unmeasured"):
            said.setdefault(r["unmeasured"], []).append(s)
    for key, why in report.get("unmeasured", {}).items():
        said.setdefault(why, []).append(key)
    return [f"unmeasured ({', '.join(keys)}): {why}" for why, keys in said.items()]
