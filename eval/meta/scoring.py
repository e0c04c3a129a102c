"""How a Scorer becomes one continuous score per labelled item, batched so a cross-encoder runs full batches.

groundedness(evidence, text[, question])  the text's claims (eval.claims.decompose; a bare yes/no read after the
                              question, as the metric reads it: eval.claims.standalone) each get their best support score over the
                              evidence's sentence windows (ScorerJudge.verify); reduced by min (default: one
                              unsupported claim sinks the answer), mean, or share (the fraction of claims at or
                              above the scorer's support threshold: what the groundedness metric itself reports)
relevance(question, passage)  scorer.relevance, clipped to [0, 1]
An item with no claims (empty text) scores None: unmeasured, left out of the statistics and counted. So does an item
the judge leaves unmeasured in ``eval`` (``unmeasurable``): text its model cannot read (the embedding and nli judges'
``unreadable``), a claim or question with no content words for the lexical judge; never scored here as a 0."""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from eval.claims import decompose, standalone
from eval.judges.base import ClaimItem, ClaimScore, Scorer, Support
from eval.judges.cross_encoder import CrossEncoderScorer
from eval.judges.lexical import LexicalScorer
from eval.judges.lexical_judge import NO_CLAIM_WORDS, NO_QUESTION_WORDS
from eval.judges.nli import CompactJudgeScorer
from eval.meta.datasets import ContrastItem, LabelledItem, Task
from eval.judges.scorer import ScorerJudge
from eval.tokens import content_tokens

Reduce = Literal["min", "mean", "share"]
REDUCERS: tuple[str, ...] = ("min", "mean", "share")


@dataclass(frozen=True)
class Tally:
    """CountingScorer's counts: pairs asked for, model inputs whose length was checked, how many of those were cut,
    and scored pairs whose model inputs could not be checked."""

    pairs: int = 0
    checked: int = 0
    truncated: int = 0
    unchecked: int = 0

    def __sub__(self, other: Tally) -> Tally:
        return Tally(self.pairs - other.pairs, self.checked - other.checked, self.truncated - other.truncated,
                     self.unchecked - other.unchecked)


def relevance_reads(scorer: object, pairs: Sequence[tuple[str, str]]) -> tuple[Any, list[tuple[str, str]]] | None:
    """The model that scores (question, passage) relevance for ``scorer``, and the (premise, hypothesis) pairs it
    reads for ``pairs``, built as the scorer builds them; None when this scorer's relevance inputs are unknown."""
    if isinstance(scorer, CompactJudgeScorer):  # each passage's windows with the question (relevance_features)
        return scorer.rel_ce or scorer.ce, scorer.relevance_reads(pairs)[0]
    if isinstance(scorer, CrossEncoderScorer):  # the whole passage as premise, the question as hypothesis
        return scorer, scorer.relevance_reads(pairs)
    return None


class CountingScorer:
    """Wraps a Scorer and counts the (premise, hypothesis) pairs it is asked to score (for pairs/second), and, when
    the scorer can tell, how many of the inputs its model really reads were longer than it reads (their end unseen):
    a claim-level scorer (``claim_support``) keeps its claim-level path, each of a claim's windows one input; a
    relevance pair is the (window, question) pairs its relevance model reads (``relevance_reads``)."""

    def __init__(self, inner: Scorer):
        self.inner = inner
        self.name = inner.name
        self.family = inner.family
        self.support_threshold = inner.support_threshold
        self.relevance_threshold = inner.relevance_threshold
        self.pairs = 0
        self.checked = 0
        self.truncated = 0
        self.unchecked = 0
        self.can_count_truncation = hasattr(inner, "count_truncated")
        if hasattr(inner, "claim_support"):
            self.claim_support = self._claim_support

    def tally(self) -> Tally:
        return Tally(self.pairs, self.checked, self.truncated, self.unchecked)

    def _check(self, model: Any, reads: list[tuple[str, str]]) -> None:
        self.checked += len(reads)
        self.truncated += model.count_truncated(reads)

    def _count(self, pairs: list[tuple[str, str]]) -> None:
        self.pairs += len(pairs)
        if self.can_count_truncation:
            self._check(self.inner, pairs)

    def _claim_support(self, items: list[ClaimItem]) -> list[ClaimScore]:
        self._count([(w, it.claim) for it in items for w in it.windows])
        return self.inner.claim_support(items)  # type: ignore[attr-defined]

    def support(self, pairs: list[tuple[str, str]]) -> list[Support]:
        self._count(pairs)
        return self.inner.support(pairs)

    def relevance(self, pairs: list[tuple[str, str]]) -> list[float]:
        self.pairs += len(pairs)
        if self.can_count_truncation:  # counted as the relevance model reads them, or not at all: never a false 0
            reads = relevance_reads(self.inner, pairs)
            if reads is None:
                self.unchecked += len(pairs)
            else:
                self._check(*reads)
        return self.inner.relevance(pairs)


@dataclass
class TaskScores:
    """Scores in item order: ``scores`` for labelled items, ``good``/``bad`` for contrast items."""

    scores: list[float | None] | None = None
    good: list[float | None] | None = None
    bad: list[float | None] | None = None
    why: dict[int, str] = field(default_factory=dict)  # item index -> why it has no score (beyond "no claims")


def chunks(items: Sequence, size: int) -> Iterator[Sequence]:
    for start in range(0, len(items), max(1, size)):
        yield items[start : start + max(1, size)]


def reduce_claims(claim_scores: Sequence[float], how: Reduce, threshold: float) -> float | None:
    if not claim_scores:
        return None
    if how == "min":
        return float(min(claim_scores))
    if how == "mean":
        return float(sum(claim_scores) / len(claim_scores))
    if how == "share":
        return sum(1 for s in claim_scores if s >= threshold) / len(claim_scores)
    raise ValueError(f"unknown reduction '{how}' (choose from {', '.join(REDUCERS)})")


Pair = tuple[str, str] | tuple[str, str, str]  # (evidence, text) or (evidence, text, question)


def claim_scores(judge: ScorerJudge, pairs: Sequence[Pair], chunk_size: int = 64) -> list[list[float]]:
    """Per (evidence, text[, question]): each claim's best support score, its claims read as the groundedness metric
    reads them (a bare yes/no after the question); one verify call (one scorer batch) per chunk."""
    out: list[list[float]] = []
    for chunk in chunks(pairs, chunk_size):
        verdicts = judge.verify([(standalone(decompose(p[1]), p[2] if len(p) > 2 else ""), [("evidence", p[0])])
                                 for p in chunk])
        out.extend([float(v.score) for v in vs] for vs in verdicts)
    return out


def groundedness(judge: ScorerJudge, pairs: Sequence[Pair], *, reduce: Reduce = "min",
                 chunk_size: int = 64) -> list[float | None]:
    threshold = judge.scorer.support_threshold
    return [reduce_claims(c, reduce, threshold) for c in claim_scores(judge, pairs, chunk_size)]


def relevance(scorer: Scorer, pairs: Sequence[tuple[str, str]], *, chunk_size: int = 64) -> list[float]:
    out: list[float] = []
    for chunk in chunks(pairs, chunk_size):
        out.extend(float(min(1.0, max(0.0, s))) for s in scorer.relevance(list(chunk)))
    return out


def _score_pairs(judge: ScorerJudge, signal: str, pairs: list[Pair], reduce: Reduce,
                 chunk_size: int) -> list[float | None]:
    if signal == "support":
        return groundedness(judge, pairs, reduce=reduce, chunk_size=chunk_size)
    if signal == "relevance":
        return list(relevance(judge.scorer, [(p[0], p[1]) for p in pairs], chunk_size=chunk_size))
    raise ValueError(f"unknown signal '{signal}'")


def unmeasurable(judge: ScorerJudge, signal: str, left: str, right: str, question: str = "") -> str | None:
    """Why ``eval`` leaves this (evidence, text) or (question, passage) unmeasured under ``judge``, so meta-eval
    scores it no more than eval does: text its model cannot read (``ScorerJudge.unreadable``, over the texts the
    metric's model reads), or, for the lexical judge, a claim (support) or a question (relevance) without content
    words, whose empty overlap would be a 0 (eval/judges/lexical_judge.py). None when it can be scored."""
    reads = getattr(judge, "unreadable", None)
    if reads is not None and (why := reads([x for x in (left, right) if x.strip()])):
        return why
    if isinstance(getattr(judge.scorer, "inner", judge.scorer), LexicalScorer):
        if signal == "support" and any(not content_tokens(c) for c in standalone(decompose(right), question)):
            return NO_CLAIM_WORDS
        if signal == "relevance" and not content_tokens(left):
            return NO_QUESTION_WORDS
    return None


def _score_kept(judge: ScorerJudge, signal: str, pairs: list[Pair], skip: Sequence[bool], reduce: Reduce,
                chunk_size: int) -> list[float | None]:
    """Scores of the pairs not skipped, None for those skipped (never sent to the scorer)."""
    kept = iter(_score_pairs(judge, signal, [p for p, s in zip(pairs, skip) if not s], reduce, chunk_size))
    return [None if s else next(kept) for s in skip]


def score_task(judge: ScorerJudge, task: Task, *, reduce: Reduce = "min", chunk_size: int = 64) -> TaskScores:
    """Scores for every item of ``task`` (contrast items: the good and the bad text against the same evidence); an
    item eval would leave unmeasured (``unmeasurable``) scores None, its reason in ``why``."""
    if task.kind == "pairwise":
        items: list[ContrastItem] = task.items
        why = {k: w for k, i in enumerate(items)
               if (w := unmeasurable(judge, task.signal, i.evidence, i.good, i.question)
                   or unmeasurable(judge, task.signal, i.evidence, i.bad, i.question))}
        pairs = [(i.evidence, i.good, i.question) for i in items] + [(i.evidence, i.bad, i.question) for i in items]
        skip = [k in why for k in range(len(items))] * 2
        flat = _score_kept(judge, task.signal, pairs, skip, reduce, chunk_size)
        return TaskScores(good=flat[: len(items)], bad=flat[len(items) :], why=why)
    labelled: list[LabelledItem] = task.items
    why = {k: w for k, i in enumerate(labelled) if (w := unmeasurable(judge, task.signal, i.left, i.right, i.question))}
    pairs: list[Pair] = [(i.left, i.right, i.question) for i in labelled]
    return TaskScores(scores=_score_kept(judge, task.signal, pairs, [k in why for k in range(len(labelled))], reduce,
                                         chunk_size), why=why)
