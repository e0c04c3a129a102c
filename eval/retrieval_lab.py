"""The retrieval lab: which of the pipeline's retrieval settings ranks a corpus's labelled queries best, chosen so
that the choice can be trusted.

Every first stage the pipeline offers (BM25, dense, hybrid RRF, hybrid min-max or z-score fusion at dense shares 0.3,
0.5 and 0.7), with BM25 at the index's setting and at other (k1, b) settings rebuilt in memory, and the rerank stage
at two shares on each hybrid, ranks the documents of every labelled query (a document scores its best chunk, as in
the pipeline). The queries are cut in two halves by a hash of their id: the setting is **chosen** on one half (best
mean nDCG@10) and **confirmed** on the other, where it is compared with the current configuration by a paired
bootstrap over queries. A setting that only fits the half it was chosen on shows up there as a tie, not a gain.

``ragdoctor retrieval-lab`` (ragdoctor/cmd_retrieval_lab.py) feeds it an index and labelled queries and writes the
JSON. Lives in eval/ because nDCG comes from eval.retrieval_metrics.
"""
from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from corpora.records import relevant_docs
from eval.index_lab import LabelIds
from eval.meta.stats import paired_difference
from eval.retrieval_metrics import retrieval_metrics
from rag.chunking import embedding_text
from rag.config import RetrievalConfig
from rag.reranker import rerank_order

LAB_VERSION = 1
CHUNKS = 100  # chunk hits per query (and candidates per retriever before fusion) turned into a document ranking
DOCS = 100  # documents ranked per query (recall@DOCS)
WEIGHTS = (0.3, 0.5, 0.7)  # dense shares of the min-max and z-score fusions
RERANK_SHARES = (0.25, 0.5)
# Lucene's classic default, the project's default before session 21 and Anserini's BEIR setting (the project's
# default since), beside the index's own (which is measured once)
BM25_SETTINGS = ((1.2, 0.75), (1.5, 0.75), (0.9, 0.4))


@dataclass(frozen=True)
class Setting:
    mode: str  # bm25 | dense | hybrid
    fusion: str = "rrf"
    dense_weight: float = 0.5
    bm25: tuple[float, float] | None = None  # (k1, b) when not the index's own
    rerank_weight: float | None = None  # None: no rerank stage

    @property
    def name(self) -> str:
        parts = [self.mode if self.mode != "hybrid" else f"hybrid {self.fusion}"]
        if self.mode == "hybrid" and self.fusion != "rrf":
            parts[0] += f" w={self.dense_weight}"
        if self.bm25 is not None and self.mode != "dense":
            parts.append(f"bm25 k1={self.bm25[0]} b={self.bm25[1]}")
        if self.rerank_weight is not None:
            parts.append(f"+rerank w={self.rerank_weight}")
        return ", ".join(parts)

    def config(self) -> dict:
        """The settings to put in the configuration file: [retrieval] keys, and [index] keys when BM25 changes."""
        retrieval: dict = {"mode": self.mode}
        if self.mode == "hybrid":
            retrieval["fusion"] = self.fusion
            if self.fusion != "rrf":
                retrieval["dense_weight"] = self.dense_weight
        retrieval["rerank"] = self.rerank_weight is not None
        if self.rerank_weight is not None:
            retrieval["rerank_weight"] = self.rerank_weight
        out = {"retrieval": retrieval}
        if self.bm25 is not None and self.mode != "dense":
            out["index"] = {"bm25_k1": self.bm25[0], "bm25_b": self.bm25[1]}
        return out


def current_setting(cfg: RetrievalConfig) -> Setting:
    """The setting the configuration runs today (BM25 as its index was built)."""
    weighted = cfg.mode == "hybrid" and cfg.fusion != "rrf"
    return Setting(cfg.mode, cfg.fusion if cfg.mode == "hybrid" else "rrf", cfg.dense_weight if weighted else 0.5,
                   None, cfg.rerank_weight if cfg.rerank else None)


def settings(bm25_grid: Sequence[tuple[float, float]] = BM25_SETTINGS, rerank: bool = True,
             current: Setting | None = None) -> list[Setting]:
    """First stages at the index's BM25 and at each of ``bm25_grid``, the rerank stage on every hybrid, and
    ``current`` (whatever it is) so that it is always measured."""
    firsts: list[Setting] = [Setting("dense")]
    for bm25 in (None, *bm25_grid):
        firsts += [Setting("bm25", bm25=bm25), Setting("hybrid", bm25=bm25)]
        firsts += [Setting("hybrid", f, w, bm25) for f in ("minmax", "zscore") for w in WEIGHTS]
    out = list(firsts)
    if rerank:
        out += [Setting(s.mode, s.fusion, s.dense_weight, s.bm25, share) for s in firsts if s.mode == "hybrid"
                for share in RERANK_SHARES]
    if current is not None and current not in out:
        out.append(current)
    return out


def half(query_id: str) -> str:
    """'choose' or 'confirm': a stable hash of the query id (the same split on every run and machine)."""
    return "choose" if hashlib.sha256(query_id.encode("utf-8")).digest()[0] % 2 == 0 else "confirm"


class _Rerank:
    """Reranker logits per (query, chunk position), computed once whichever first stage brought the chunk."""

    def __init__(self, reranker, depth: int):
        self.reranker, self.depth = reranker, depth
        self.logits: dict[tuple[int, int], float] = {}
        self.seconds: list[float] = []

    def order(self, qi: int, question: str, hits: list, texts: Sequence[str], weight: float) -> list[int]:
        head = hits[: self.depth]
        todo = [h.position for h in head if (qi, h.position) not in self.logits]
        if todo:
            t = time.perf_counter()
            for pos, v in zip(todo, self.reranker.score(question, [texts[p] for p in todo])):
                self.logits[(qi, pos)] = float(v)
            if len(todo) == len(head):
                self.seconds.append(time.perf_counter() - t)
        order, _ = rerank_order([h.score for h in head], [self.logits[(qi, h.position)] for h in head], weight)
        return [head[j].position for j in order] + [h.position for h in hits[self.depth:]]


def run_lab(store, embedder, questions: Sequence[str], query_ids: Sequence[str],
            qrels: Mapping[str, Mapping[str, int]], candidates: Sequence[Setting], current: Setting, *,
            make_retriever: Callable, bm25_build: Callable | None = None, reranker=None, rerank_depth: int = 20,
            seed: int = 0, keep_per_query: bool = False, log: Callable[[str], None] = lambda _m: None,
            rrf_k: int = 60) -> dict:
    """Measure every setting of ``candidates`` on the labelled queries, choose on one half, confirm on the other.

    ``make_retriever(store, embedder, RetrievalConfig, mode)`` is rag.retrievers.make_retriever; ``bm25_build(texts,
    k1=, b=)`` rebuilds BM25 for the settings that change it (the store's own is put back afterwards); ``reranker``
    (rag.reranker.CrossEncoderReranker) is needed by the settings with a rerank share. ``keep_per_query`` adds
    ``query_ids`` and ``per_query`` (setting name -> nDCG@10 per query, in that order) for paired comparisons.
    ``rrf_k`` is the configuration's (hybrid RRF rows use it). Every first stage ranks CHUNKS chunks a query, with as
    many candidates per retriever before fusion. Labels that name chunks (``kv#0``) are compared with the chunk
    ranking, as ``eval`` compares them."""
    keep = [i for i, q in enumerate(query_ids) if relevant_docs(qrels.get(q, {}))]
    ids, questions = [query_ids[i] for i in keep], [questions[i] for i in keep]
    halves = np.array([half(q) for q in ids])
    if not ids:  # nothing to rank against: no rows (a mean over no query would be NaN), and the reason
        return _verdict([], {}, halves, current, 0, None, seed)
    label_ids = LabelIds([n.metadata["doc_id"] for n in store.nodes], [n.node_id for n in store.nodes])
    texts = [n.text for n in store.nodes]
    rerank = _Rerank(reranker, rerank_depth) if reranker is not None else None
    per_query: dict[str, np.ndarray] = {}
    rows = []
    own_bm25 = store.bm25
    if own_bm25 is None:  # a dense-only index: BM25 and hybrid would silently be dense again
        candidates = [s for s in candidates if s.mode == "dense"]
    try:
        for bm25 in dict.fromkeys(s.bm25 for s in candidates):
            if bm25 is not None:
                if bm25_build is None:
                    continue
                store.bm25 = bm25_build([embedding_text(n) for n in store.nodes], k1=bm25[0], b=bm25[1])
            firsts = {(s.mode, s.fusion, s.dense_weight) for s in candidates if s.bm25 == bm25}
            for mode, fusion, w in sorted(firsts):
                cfg = RetrievalConfig(mode=mode, fusion=fusion, dense_weight=w, candidate_k=CHUNKS,  # type: ignore[arg-type]
                                      rrf_k=rrf_k)
                t = time.perf_counter()
                hits = make_retriever(store, embedder, cfg, mode).search_batch(list(questions), CHUNKS)
                search_s = time.perf_counter() - t
                for s in candidates:
                    if (s.mode, s.fusion, s.dense_weight, s.bm25) != (mode, fusion, w, bm25):
                        continue
                    if s.rerank_weight is not None and rerank is None:
                        continue
                    if s.rerank_weight is None:
                        positions = [[h.position for h in row] for row in hits]
                    else:
                        positions = [rerank.order(qi, q, row, texts, s.rerank_weight)  # type: ignore[union-attr]
                                     for qi, (q, row) in enumerate(zip(questions, hits))]
                    rankings = {q: label_ids.ranking(pos, qrels[q], DOCS) for q, pos in zip(ids, positions)}
                    m = retrieval_metrics({q: qrels[q] for q in ids}, rankings, ks=(10, DOCS))
                    per_query[s.name] = np.array([m[q]["ndcg@10"] for q in ids])
                    row = {"name": s.name, **asdict(s), "config": s.config(), "search_s": round(search_s, 3)}
                    for key in ("ndcg@10", f"recall@{DOCS}", f"mrr@{DOCS}"):
                        row[key] = float(np.mean([m[q][key] for q in ids]))
                    for part in ("choose", "confirm"):
                        sel = per_query[s.name][halves == part]
                        row[f"ndcg@10_{part}"] = float(sel.mean()) if sel.size else None
                    rows.append(row)
                    log(f"{s.name}: nDCG@10 {row['ndcg@10']:.3f}")
    finally:
        store.bm25 = own_bm25
    out = _verdict(rows, per_query, halves, current, len(ids), rerank, seed, dense_only=own_bm25 is None)
    out["rrf_k"] = rrf_k
    by_chunk = sum(label_ids.by_chunk(qrels[q]) for q in ids)
    if by_chunk:
        out["chunk_level_queries"] = by_chunk  # their labels name chunks: ranked by chunk, not by document
    if own_bm25 is None:
        out["note"] = "the index has no BM25 part: only dense retrieval was measured"
    if keep_per_query:
        out["query_ids"], out["per_query"] = ids, {k: v.tolist() for k, v in per_query.items()}
    return out


def _verdict(rows: list[dict], per_query: dict[str, np.ndarray], halves: np.ndarray, current: Setting, n: int,
             rerank: _Rerank | None, seed: int, dense_only: bool = False) -> dict:
    """The setting with the best choose-half nDCG@10, and its confirm-half difference from the current setting."""
    out: dict = {"lab_version": LAB_VERSION, "n_queries": n, "chunks_per_query": CHUNKS,
                 "n_choose": int((halves == "choose").sum()), "n_confirm": int((halves == "confirm").sum()),
                 "rows": rows, "current": current.name, "chosen": None, "confirm": None,
                 "rerank_ms_p50": float(np.percentile(rerank.seconds, 50) * 1e3) if rerank and rerank.seconds else None}
    scored = [r for r in rows if r["ndcg@10_choose"] is not None]
    why = None
    if n == 0:
        why = "no labelled query: none names a relevant document (a grade above 0)"
    elif out["n_choose"] == 0 or out["n_confirm"] == 0:
        empty = "choosing" if out["n_choose"] == 0 else "confirming"
        why = f"no labelled query in the {empty} half ({n} quer{'y' if n == 1 else 'ies'} in all): more are needed"
    elif current.name not in per_query:
        why = f"the current setting ({current.name}) could not be measured" + (
            ": the index has no BM25 part" if dense_only and current.mode != "dense" else
            ": it has a rerank stage and the lab runs without the reranker" if current.rerank_weight is not None
            and rerank is None else "")
    elif not scored:
        why = "no setting could be measured"
    elif not any(per_query[r["name"]].any() for r in scored):
        why = ("no setting ranked a relevant id in the top 10 of any query: do the labels name the corpus's documents "
               "(or its chunks, as doc#0)?")
    if why:
        out["unmeasured"] = why
        return out
    best = max(scored, key=lambda r: (r["ndcg@10_choose"], r["name"] == current.name))
    out["chosen"] = best["name"]
    a, b = per_query[best["name"]][halves == "confirm"], per_query[current.name][halves == "confirm"]
    diff = paired_difference(lambda idx: float(a[idx].mean()), lambda idx: float(b[idx].mean()), len(a),
                             n_resamples=2000, seed=seed)
    out["confirm"] = {"chosen": float(a.mean()), "current": float(b.mean()), "difference": diff["difference"],
                      "ci": list(diff["ci"]), "verdict": diff["verdict"], "reason": diff.get("reason")}
    return out


def toml_snippet(setting: dict) -> str:
    """A chosen row's configuration as the lines to put in ragdoctor.toml."""
    lines: list[str] = []
    for section, keys in setting["config"].items():
        lines.append(f"[pipeline.{section}]")
        for k, v in keys.items():
            lines.append(f"{k} = {str(v).lower() if isinstance(v, bool) else repr(v) if isinstance(v, str) else v}"
                         .replace("'", '"'))
    return "\n".join(lines)
