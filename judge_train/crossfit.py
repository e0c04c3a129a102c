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
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from judge_train.combine import ClaimRows, claim_rows
from judge_train.data import PoolRecord

Log = Callable[[str], None]


def stage_chain(stage: Path) -> Iterator[tuple[Path, dict]]:
    """(folder, recipe) of a trained stage, then of the stage it started from, and so on while the base is a stage
    folder here (each folder once)."""
    visited: set[Path] = set()
    while stage.is_dir() and (stage / "training_config.json").is_file() and stage.resolve() not in visited:
        visited.add(stage.resolve())
        recipe = json.loads((stage / "training_config.json").read_text())["recipe"]
        yield stage, recipe
        stage = Path(recipe["base_model"])


def trained_sources(stage: Path) -> set[str]:
    """The pool sources a stage (and every stage it started from) trained on: those with a cap above 0."""
    return {s for _, recipe in stage_chain(stage)
            for s, cap in recipe["data"].get("cap_per_label", {}).items() if cap and cap > 0}


def origin_sources(records: Sequence[PoolRecord]) -> list[frozenset[str]]:
    """Each record's pool source(s). A synthetic record is made from records of real sources and takes theirs, found by
    group: swapped claims ('<group>:orig' / ':swap') and buried evidence ('<group>') one, joined claims
    ('<group>+<group>') two."""
    by_group = {r.group: r.source for r in records if not r.source.startswith("synthetic_")}
    out = []
    for r in records:
        if not r.source.startswith("synthetic_"):
            out.append(frozenset({r.source}))
            continue
        groups = [g.removesuffix(":orig").removesuffix(":swap") for g in r.group.split("+")]
        out.append(frozenset(by_group.get(g, r.source) for g in groups))
    return out


def assign_folds(records: Sequence[PoolRecord], folds: Sequence[set[str]]) -> list[int]:
    """Per record, the index of the first fold model that never trained on its (origin) sources, or -1 (the full
    model) when every fold saw one of them."""
    return [next((k for k, seen in enumerate(folds) if not (src & seen)), -1) for src in origin_sources(records)]


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
                      log: Log) -> tuple[ClaimRows, dict]:
    """Feature rows of ``records``, each from the fold scorer that never trained on its source (the full scorer where
    every fold did), and the count of records each scorer gave."""
    fold_of = np.asarray(assign_folds(records, [seen for _, seen in fold_scorers]))
    parts, counts = [], {}
    for k, scorer in [(-1, full), *enumerate(s for s, _ in fold_scorers)]:
        idx = np.flatnonzero(fold_of == k)
        counts["full" if k < 0 else f"fold{k}"] = int(idx.size)
        if idx.size:
            log(f"  cross-fit: {idx.size} records scored by {'the full model' if k < 0 else f'fold model {k}'}")
            parts.append((idx, claim_rows(scorer, [records[i] for i in idx], log)))
    return merge_rows(parts, len(records)), counts
