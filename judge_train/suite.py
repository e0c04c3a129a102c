"""The training pool's held-out slices as meta-evaluation tasks: one task per source, so that judges (and the
recipe's choices) are compared by their **worst** source, never by a pooled average.

``ragdoctor meta-eval --dataset pool`` scores every judge on them: groundedness tasks for the support sources
(claim-level pool, attribution, general NLI; each record's text against its evidence, claims reduced by min) and
context-relevance tasks for the relevance sources ((question, passage) pairs), named 'metric/source'. The slice is
the half of the slice every training stage leaves out (``heldout``: a hash of each record's group) that the combiners
are not fit on either (``heldout_half``), so a judge built by the project's recipes has never seen these rows; rows
of one group resample together in the bootstrap.
"""
from __future__ import annotations

import random
from pathlib import Path

from judge_train.data import (NLI_CAPS, RELEVANCE_CAPS, SUPPORT_CAPS, DataConfig, heldout, heldout_half,
                              read_pool, long_evidence_records, read_relevance_pool,
                              swap_records, conjunction_records)
from eval.meta.datasets import LabelledItem, Task

HELDOUT_PERCENT = 10  # the recipes' held-out share (recipes/*.json): keep them equal


def _sample(rows: list, per_label: int, rng: random.Random) -> list:
    out = []
    for label in (0, 1):
        side = [r for r in rows if r.label == label]
        rng.shuffle(side)
        out += side[:per_label]
    return sorted(out, key=lambda r: (r.group, r.text))


def report_records(records: list, signal: str, per_label: int, rng: random.Random, seed: int,
                   percent: int = HELDOUT_PERCENT) -> tuple[dict[str, list], int]:
    """Per source, the sampled records of the report half of the held-out slice (at most ``per_label`` of each
    label; support: with the made-up sources built from it; a source with one label only is left out), and the number
    of held-out records they were drawn from."""
    held = [r for r in records if heldout(r.group, percent) and heldout_half(r.group) == "report"]
    if signal == "support":  # changed numbers, names, polarity against the same evidence: a source of its own
        held += (swap_records(held, per_label, seed) + long_evidence_records(held, per_label, seed)
                 + conjunction_records(held, per_label, seed))
    out = {}
    for source in sorted({r.source for r in held}):
        rows = _sample([r for r in held if r.source == source], per_label, rng)
        if len({r.label for r in rows}) == 2:  # one label only (NoMIRACL's judged negatives): no AUROC to compute
            out[source] = rows
    return out, len(held)


def support_pool(data_dir: str | Path) -> list:
    """Every support record of the pool, as ``pool_tasks`` reads it."""
    return read_pool(DataConfig(data_dir=str(data_dir), cap_per_label=dict(SUPPORT_CAPS)))[0]


def support_report_records(data_dir: str | Path, per_label: int = 150, seed: int = 0,
                           percent: int = HELDOUT_PERCENT, support: list | None = None) -> list:
    """The support records ``pool_tasks`` scores, the same sample in the same order (judge_train/crossfit.py scores
    them cross-fitted); ``support``: the pool's support records when already read (support_pool)."""
    support = support_pool(data_dir) if support is None else support
    by_source, _ = report_records(support, "support", per_label, random.Random(seed), seed, percent)
    return [r for rows in by_source.values() for r in rows]


def pool_tasks(data_dir: str | Path, per_label: int = 150, seed: int = 0,
               percent: int = HELDOUT_PERCENT) -> tuple[list[Task], int]:
    """One Task per source of the held-out slice (at most ``per_label`` records of each label), and the number of
    held-out records they were drawn from."""
    rng = random.Random(seed)
    support = support_pool(data_dir)
    relevance, _ = read_relevance_pool(DataConfig(data_dir=str(data_dir), cap_per_label=dict(RELEVANCE_CAPS)), seed)
    tasks: list[Task] = []
    total = 0
    for metric, signal, records in (("groundedness", "support", support), ("context_relevance", "relevance", relevance)):
        by_source, n_held = report_records(records, signal, per_label, rng, seed, percent)
        total += n_held
        for source, rows in by_source.items():
            if signal == "support":
                items = [LabelledItem(f"{source}:{k}", r.evidence, r.text, float(r.label), group=r.group)
                         for k, r in enumerate(rows)]
            else:
                items = [LabelledItem(f"{source}:{k}", r.text, r.evidence, float(r.label), r.question or "",
                                      group=r.group) for k, r in enumerate(rows)]
            kind = "nli" if source in NLI_CAPS else "pool"
            tasks.append(Task("pool", f"{metric}/{source}", f"{kind} label", signal, "binary", items))
    return tasks, total
