"""Which sample a person labels next: stratified by the judge's score, so a few labels cover the whole score range.

The run's samples are ranked by the judge's score on one metric (ties broken by a seeded hash of the id, so equal
scores still spread evenly) and cut into ``bins`` bins of equal size; samples the judge did not score form one more
bin. The queue then takes, again and again, the bin with the fewest labelled-or-queued samples relative to its size
(the lowest bin first among equals) and a random (seeded) sample from it. So at any moment the labelled set is a
proportional stratified draw from the run: as many labels per bin as its share of the samples, whichever samples were
labelled before (in the dashboard, by `ragdoctor label`, by someone else). That keeps the PPI estimate of
eval/calibration.py valid (proportional allocation is never less efficient than a simple random draw), while both
ends of the score range get labels early, which the judge's AUROC needs. Pure and deterministic by ``seed``."""
from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping


def _tiebreak(sample_id: str, seed: int) -> str:
    return hashlib.sha256(f"{seed}:{sample_id}".encode()).hexdigest()


def strata(scores: Mapping[str, float | None], bins: int = 5, seed: int = 0) -> list[list[str]]:
    """The bins: equal-size bins of the scored samples from the lowest score up, then the unscored ones (if any)."""
    if bins < 1:
        raise ValueError("bins must be at least 1")
    scored = [s for s, v in scores.items() if v is not None and not math.isnan(v)]
    have = set(scored)  # once: a set built per sample made the queue quadratic (50,000 samples: 40 s)
    unscored = [s for s in scores if s not in have]
    ranked = sorted(scored, key=lambda s: (scores[s], _tiebreak(s, seed)))
    k = min(bins, len(ranked)) or 1
    cuts = [round(i * len(ranked) / k) for i in range(k + 1)]
    out = [ranked[cuts[i]:cuts[i + 1]] for i in range(k) if cuts[i + 1] > cuts[i]]
    return out + ([unscored] if unscored else [])


def queue(scores: Mapping[str, float | None], labelled: Iterable[str] = (), *, bins: int = 5,
          seed: int = 0) -> list[str]:
    """Every sample not in ``labelled``, in the order to label them (see the module docstring)."""
    done = set(labelled)
    groups = strata(scores, bins, seed)
    todo = [sorted((s for s in g if s not in done), key=lambda s: _tiebreak(s, seed + 1), reverse=True)
            for g in groups]  # popped from the end: the smallest hash first
    taken = [sum(1 for s in g if s in done) for g in groups]
    sizes = [len(g) for g in groups]
    order: list[str] = []
    while any(todo):
        b = min((i for i, t in enumerate(todo) if t), key=lambda i: ((taken[i] + 1) / sizes[i], i))
        order.append(todo[b].pop())
        taken[b] += 1
    return order
