"""Listwise groups for a retrieval reranker (TrainConfig task 'rerank').

A judge's relevance model learns "does this passage bear on the question" from single pairs; a reranker has to put
the passage that bears on a query above its near misses. Each group here is one query of the pool's query-passage
sources with one passage known to bear on it first and ``negatives`` others after it: passages a person judged
irrelevant to that query where the source has them (Factcheck-GPT's retrieved pages, QNLI's sentences of the same
paragraph that do not answer), then the source's passages BM25 ranks highest for the query that are not its own,
then one random passage of the source. Never SciFact or Cranfield (the retrieval benchmarks), never the dev files.

Which passages bear on a query, per source:
- factcheck_gpt: the retrieved pages a person judged to support, partly support or refute the claim (a refuting
  abstract is relevant to a SciFact claim too); 'irrelevant' pages are judged negatives.
- attributionbench: the references a search returned for the claim, attributable or not.
- scitail: premises that entail the hypothesis (the neutral ones were retrieved for it too: never negatives).
- halueval_qa: the question's own knowledge.
- qnli: the sentence that answers the question; the others of its paragraph are judged negatives.

Every passage is cut to the ``window_words``-word window that shares most content words with the query (a chunk of
a corpus is about that long; eval.judges.nli.relevance_windows), the same cut for the relevant passage and its
negatives, so the length or position of a window is no cue.
"""
from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from eval.judges.nli import relevance_windows
from judge_train.data import _factcheck_relevance, _norm, dev_keys, heldout
from judge_train.sources import read_source

RERANK_SOURCES = ("factcheck_gpt", "attributionbench", "scitail", "halueval_qa", "qnli")
RERANK_CAPS = {"factcheck_gpt": 900, "attributionbench": 600, "scitail": 500, "halueval_qa": 500, "qnli": 500}
JUDGED_NEGATIVES = frozenset({"factcheck_gpt", "qnli"})  # sources whose non-relevant pairs a person judged
QUESTION_KEYED = frozenset({"halueval_qa", "qnli"})  # the query is the record's question, not its text


@dataclass(frozen=True)
class RerankGroup:
    """One query and its candidate passages, the relevant one first."""

    source: str
    group: str  # the split key of the query's records (judge_train.data.heldout)
    query: str
    passages: tuple[str, ...]


@dataclass
class _Query:
    group: str = ""
    relevant: list[str] = field(default_factory=list)
    judged_negative: list[str] = field(default_factory=list)
    other: list[str] = field(default_factory=list)  # its own passages that are neither (never used as negatives)

    def own(self) -> set[str]:
        return {*self.relevant, *self.judged_negative, *self.other}


def source_queries(source: str, data_dir: Path) -> dict[str, _Query]:
    """query text -> its passages, by the rules of the module docstring."""
    if source not in RERANK_SOURCES:
        raise ValueError(f"'{source}' is not a rerank source (one of {', '.join(RERANK_SOURCES)})")
    recs = _factcheck_relevance(data_dir) if source == "factcheck_gpt" else read_source(source, data_dir)
    out: dict[str, _Query] = defaultdict(_Query)
    for r in recs:
        query = (r.question if source in QUESTION_KEYED else r.text) or ""
        if not query.strip() or not r.evidence.strip():
            continue
        q = out[query.strip()]
        q.group = r.group
        if source == "attributionbench" or r.label == 1:
            q.relevant.append(r.evidence)
        elif source in JUDGED_NEGATIVES:
            q.judged_negative.append(r.evidence)
        else:
            q.other.append(r.evidence)
    for q in out.values():  # a passage listed under both labels (duplicated rows) counts as relevant only
        q.relevant = list(dict.fromkeys(q.relevant))
        q.judged_negative = [p for p in dict.fromkeys(q.judged_negative) if p not in q.relevant]
    return dict(out)


class _Miner:
    """BM25 over one source's passages (bm25s, English stopwords)."""

    def __init__(self, passages: list[str]):
        import bm25s

        self.passages = passages
        self.bm25 = bm25s.BM25()
        self.bm25.index(bm25s.tokenize(passages, stopwords="en", show_progress=False), show_progress=False)

    def top(self, query: str, k: int) -> list[str]:
        import bm25s

        k = min(k, len(self.passages))
        ids, _ = self.bm25.retrieve(bm25s.tokenize([query], stopwords="en", show_progress=False), k=k,
                                    show_progress=False)
        return [self.passages[i] for i in ids[0].tolist()]


def source_groups(source: str, data_dir: Path, n_train: int, n_heldout: int, negatives: int, heldout_percent: int,
                  window_words: int, rng: random.Random, skip: set[str] | None = None,
                  per_query: int = 2) -> tuple[list[RerankGroup], list[RerankGroup]]:
    """(train, held-out) groups of one source: at most ``per_query`` groups per query (one per relevant passage),
    ``n_train`` / ``n_heldout`` groups per side. Queries in ``skip`` (normalised) are left out."""
    queries = source_queries(source, data_dir)
    passages = sorted({p for q in queries.values() for p in q.own()})
    if len(passages) < negatives + 1:  # a query needs that many passages besides its own
        return [], []
    miner = _Miner(passages)
    order = sorted(queries)
    rng.shuffle(order)
    sides: dict[bool, list[RerankGroup]] = {False: [], True: []}
    caps = {False: n_train, True: n_heldout}
    for text in order:
        q = queries[text]
        side = heldout(q.group, heldout_percent)
        if not q.relevant or len(sides[side]) >= caps[side] or (skip and _norm(text) in skip):
            continue
        own = q.own()
        mined = [p for p in miner.top(text, negatives * 3 + len(own)) if p not in own]
        for rel in q.relevant[:per_query]:
            judged = list(q.judged_negative)
            rng.shuffle(judged)
            negs = list(dict.fromkeys(judged[: negatives // 2] + mined))[: negatives - 1]
            rand = [p for p in rng.sample(passages, min(len(passages), 8)) if p not in own and p not in negs]
            negs += rand[:1]
            if len(negs) < negatives:
                continue
            cut = [relevance_windows(p, text, words=window_words, keep=1)[0] for p in [rel, *negs]]
            sides[side].append(RerankGroup(source, q.group, text, tuple(cut)))
            if len(sides[side]) >= caps[side]:
                break
    return sides[False], sides[True]


def rerank_groups(data_dir: str | Path, caps: dict[str, int], negatives: int, heldout_percent: int,
                  window_words: int, seed: int, drop_dev_overlap: bool = True
                  ) -> tuple[list[RerankGroup], list[RerankGroup], dict]:
    """(train, held-out, stats) over the sources in ``caps`` (0 drops one). Held-out groups per source: the share of
    ``heldout_percent``, at least 30 - they measure the bare reranker (MRR), never train it."""
    data_dir = Path(data_dir)
    rng = random.Random(seed)
    skip = dev_keys(data_dir) if drop_dev_overlap else None
    train: list[RerankGroup] = []
    held: list[RerankGroup] = []
    stats: dict = {"rerank_groups": {}, "negatives_per_group": negatives, "window_words": window_words,
                   "dev_overlap_check": "ran" if skip is not None else "skipped (dev files absent or disabled)"}
    for source, cap in caps.items():
        if cap <= 0:
            continue
        n_held = max(30, cap * heldout_percent // max(1, 100 - heldout_percent))
        t, h = source_groups(source, data_dir, cap, n_held, negatives, heldout_percent, window_words, rng, skip)
        train += t
        held += h
        stats["rerank_groups"][source] = {"train": len(t), "heldout": len(h)}
    rng.shuffle(train)
    return train, held, stats
