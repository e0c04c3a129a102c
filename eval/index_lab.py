"""The index lab: every faiss index kind built over the same vectors, measured side by side (build time, index bytes,
one-query p50/p99 latency, recall@10 against exact search, nDCG@10 where relevance labels exist). Pure computation
over arrays; ``ragdoctor index-lab`` (ragdoctor/cmd_index_lab.py) feeds it a corpus's vectors and writes the JSON the
dashboard's "Index lab" page reads. Lives in eval/ (not rag/) because nDCG comes from eval.retrieval_metrics."""
from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import faiss
import numpy as np

from corpora.records import relevant_docs
from eval.retrieval_metrics import mean_metrics, retrieval_metrics
from rag import faiss_index
from rag.config import IndexConfig

LAB_VERSION = 1
K, CANDIDATES = 10, 100  # recall@K against flat; chunk hits turned into a document ranking for nDCG
LATENCY_QUERIES = 200  # one-at-a-time searches timed per index (the first is a warm-up, not counted)


@dataclass(frozen=True)
class Variant:
    name: str
    cfg: IndexConfig
    note: str  # what it trades, one line (the page explains more)


def variants(nlist: int) -> list[Variant]:
    """The index kinds the lab compares: flat (exact), SQ8, IVF at the old fixed nprobe 8 and at the default, IVF-PQ
    without and with each refine, HNSW."""
    old = min(8, nlist)
    former = [Variant(f"ivf nprobe={old}", IndexConfig(kind="ivf", nlist=nlist, nprobe=old),
                      f"IVF, the former fixed nprobe {old} of {nlist} lists")]
    return [
        Variant("flat", IndexConfig(kind="flat"), "exact: every vector, float32"),
        Variant("sq8", IndexConfig(kind="sq8"), "8-bit scalar quantizer: 1 byte per dimension"),
        *(former if old != faiss_index.default_nprobe(nlist) else []),
        Variant(f"ivf nprobe={faiss_index.default_nprobe(nlist)}", IndexConfig(kind="ivf", nlist=nlist),
                f"IVF, the default nprobe max(8, ceil(nlist/4)) of {nlist} lists"),
        Variant("ivfpq", IndexConfig(kind="ivfpq", nlist=nlist, refine="none"), "IVF + product quantizer codes only"),
        Variant("ivfpq+refine sq8", IndexConfig(kind="ivfpq", nlist=nlist, refine="sq8"),
                "IVF-PQ, the top k_factor*k re-ranked with 8-bit vectors (the default)"),
        Variant("ivfpq+refine flat", IndexConfig(kind="ivfpq", nlist=nlist, refine="flat"),
                "IVF-PQ, the top k_factor*k re-ranked with exact float vectors (IndexRefineFlat)"),
        Variant("hnsw", IndexConfig(kind="hnsw"), "HNSW graph over float32 vectors"),
    ]


def lab_nlist(n: int) -> int:
    """round(sqrt(n)) lists, the faiss rule of thumb (nlist ~ C * sqrt(n)), at least 1 and 39 vectors per list."""
    return max(1, min(round(math.sqrt(n)), n // 39 or 1))


def doc_ranking(doc_ids: Sequence[str], positions: Sequence[int] | np.ndarray, k: int = CANDIDATES) -> list[str]:
    """Chunk positions (best first) -> document ids, first occurrence wins, at most k."""
    out: dict[str, None] = {}
    for p in positions:
        if p >= 0:
            out.setdefault(doc_ids[int(p)])
            if len(out) == k:
                break
    return list(out)


class LabelIds:
    """Chunk positions -> the ids a query's relevance labels are compared with: documents (first occurrence of each),
    or chunks when the relevant labels (grade > 0) name chunks of the index and none of its documents (``kv#0``), as
    eval.metrics.retrieval reads a trace's labels. A label graded 0 or below never sets the level."""

    def __init__(self, doc_ids: Sequence[str], chunk_ids: Sequence[str] = ()):
        self.doc_ids, self.chunk_ids = list(doc_ids), list(chunk_ids)
        self._docs, self._chunks = set(self.doc_ids), set(self.chunk_ids)

    def by_chunk(self, grades: Mapping[str, int]) -> bool:
        named = set(relevant_docs(grades))
        return bool(named & self._chunks) and not named & self._docs

    def ranking(self, positions: Sequence[int] | np.ndarray, grades: Mapping[str, int],
                k: int = CANDIDATES) -> list[str]:
        if self.by_chunk(grades):
            return [self.chunk_ids[int(p)] for p in positions if p >= 0][:k]
        return doc_ranking(self.doc_ids, positions, k)


def recall_vs(pos: np.ndarray, ref: np.ndarray, k: int = K) -> float:
    """Mean share of the reference's top-k positions that ``pos`` also has in its top k."""
    shares = []
    for a, b in zip(pos, ref):
        want = {int(x) for x in b[:k] if x >= 0}
        got = {int(x) for x in a[:k] if x >= 0}
        shares.append(len(got & want) / max(1, len(want)))
    return float(np.mean(shares)) if shares else 0.0


def latency_ms(index, queries: np.ndarray, k: int = K) -> dict[str, float | int]:
    """p50/p99 of one-query searches (after one warm-up search)."""
    index.search(queries[:1], k)
    lat = []
    for q in queries:
        t = time.perf_counter()
        index.search(q[None], k)
        lat.append(time.perf_counter() - t)
    return {"p50_ms": float(np.percentile(lat, 50)) * 1e3, "p99_ms": float(np.percentile(lat, 99)) * 1e3,
            "latency_queries": len(lat)}


def measure(variant: Variant, vectors: np.ndarray, queries: np.ndarray) -> tuple[dict, np.ndarray]:
    """One index kind: built on the CPU, its numbers, and its top-CANDIDATES positions for every query."""
    n, dim = vectors.shape
    t = time.perf_counter()
    index = faiss_index.build(vectors, variant.cfg)
    build_s = time.perf_counter() - t
    faiss_index.tune(index, variant.cfg)
    size = int(faiss.serialize_index(index).size)
    lat = latency_ms(index, queries[:LATENCY_QUERIES])
    _, pos = faiss_index.search(index, queries, CANDIDATES)
    params: dict[str, float | int] = {}
    try:
        ivf = faiss.extract_index_ivf(index)
        params.update(nlist=int(ivf.nlist), nprobe=int(ivf.nprobe))
    except (RuntimeError, AttributeError):
        pass
    if getattr(index, "hnsw", None) is not None:
        params.update(M=variant.cfg.hnsw_m, efSearch=int(index.hnsw.efSearch))
    if hasattr(index, "k_factor") and hasattr(index, "refine_index"):
        params.update(k_factor=float(index.k_factor))
    row = {"name": variant.name, "kind": variant.cfg.kind, "factory": faiss_index.factory_string(variant.cfg, n, dim),
           "params": params, "note": variant.note, "build_s": build_s, "index_bytes": size,
           "bytes_per_vector": size / n, **lat}
    return row, pos


def ndcg_at_10(ids: LabelIds, pos: np.ndarray, query_ids: Sequence[str],
               qrels: Mapping[str, Mapping[str, int]]) -> float | None:
    rankings = {qid: ids.ranking(row, qrels[qid]) for qid, row in zip(query_ids, pos) if qid in qrels}
    if not rankings:
        return None
    return mean_metrics(retrieval_metrics({q: qrels[q] for q in rankings}, rankings, ks=(K,))).get(f"ndcg@{K}")


def run_lab(vectors: np.ndarray, queries: np.ndarray, *, doc_ids: Sequence[str], query_ids: Sequence[str],
            qrels: Mapping[str, Mapping[str, int]] | None, nlist: int | None = None, log=None,
            chunk_ids: Sequence[str] = ()) -> dict:
    """Every variant over ``vectors`` (normalised, one row per chunk; ``doc_ids[i]`` the document of row i,
    ``chunk_ids[i]`` its chunk id) and the ``queries`` (one row per query id). nDCG@10 is measured against ``qrels``
    when given (at document level, or chunk level for labels that name chunks), else it is ``unmeasured`` with the
    reason; recall@10 against flat is ``unmeasured`` (None) when the index holds K vectors or fewer (every kind then
    returns them all). Returns the lab's rows and settings (the JSON the page reads)."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    n, dim = vectors.shape
    asked = nlist
    nlist = faiss_index.trainable_nlist(nlist or lab_nlist(n), n)  # the rows' names and settings are what is built
    if asked and asked != nlist and log:
        log(f"nlist {asked} needs {asked * 39} vectors to train (39 per list); {n} build {nlist} list(s)")
    rows, positions = [], {}
    for v in variants(nlist):
        row, positions[v.name] = measure(v, vectors, queries)
        rows.append(row)
        if log:
            log(f"{v.name}: {row['factory']}, {row['index_bytes'] / 2**20:.2f} MiB, p50 {row['p50_ms']:.3f} ms")
    flat = positions["flat"]
    flat_bytes = rows[0]["index_bytes"]
    asked_ids = set(query_ids)  # labels of a query not searched here are not counted as measured
    labelled = {q: r for q, r in (qrels or {}).items() if q in asked_ids and relevant_docs(r)}
    ids = LabelIds(doc_ids, chunk_ids)
    for row in rows:
        pos = positions[row["name"]]
        row["recall@10_vs_flat"] = recall_vs(pos, flat) if n > K else None
        row["memory_vs_flat"] = row["index_bytes"] / flat_bytes
        row["ndcg@10"] = ndcg_at_10(ids, pos, query_ids, labelled) if labelled else None
    why = None if labelled else "no relevance labels for these queries (a seeded sample of chunk vectors, or " \
                                "questions without a relevant document: none with a grade above 0)"
    recall_why = None if n > K else f"the index holds {n} vectors, no more than the {K} each search returns: every " \
                                    "kind returns them all, so recall against exact search says nothing"
    return {"version": LAB_VERSION, "n_vectors": n, "dim": dim, "nlist": nlist,
            **({"nlist_asked": asked} if asked and asked != nlist else {}), "n_queries": len(queries),
            "n_labelled_queries": len(labelled) if labelled else 0, "ndcg_unmeasured": why,
            "recall_unmeasured": recall_why,
            "k": K, "candidates": CANDIDATES, "faiss_version": faiss.__version__,
            "omp_threads": faiss.omp_get_max_threads(), "rows": rows}


def sample_queries(vectors: np.ndarray, n: int = LATENCY_QUERIES, seed: int = 0) -> tuple[np.ndarray, list[str]]:
    """A seeded sample of the corpus's own vectors as queries (when there are no questions); ids are positions."""
    rng = np.random.default_rng(seed)
    pick = np.sort(rng.choice(len(vectors), size=min(n, len(vectors)), replace=False))
    return vectors[pick], [f"chunk-{int(i)}" for i in pick]
