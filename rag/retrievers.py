"""Dense (faiss through llama-index's FaissVectorStore), BM25 and hybrid (RRF or weighted) retrieval over an IndexStore.

Each retriever is a llama-index ``BaseRetriever`` (``retrieve("question") -> [NodeWithScore]``) and also offers
``search_batch`` returning :class:`Hit` lists with every signal kept (scores and ranks per retriever)."""
from __future__ import annotations

from dataclasses import dataclass, field

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import VectorStoreQuery

from corpora.errors import warn
from rag import faiss_index
from rag.config import RetrievalConfig
from rag.fusion import reciprocal_rank_fusion, weighted_fusion
from rag.store import IndexStore, warn_query_cut_off


@dataclass
class Hit:
    position: int  # index into IndexStore.nodes
    score: float  # the retriever's own score (cosine, BM25 or RRF)
    signals: dict[str, float] = field(default_factory=dict)  # dense/bm25 scores and ranks that fed into it

class _StoreRetriever(BaseRetriever):
    name = "base"

    def __init__(self, store: IndexStore, embedder, cfg: RetrievalConfig):
        super().__init__()
        self.store = store
        self.embedder = embedder
        self.cfg = cfg

    def search_batch(self, queries: list[str], k: int) -> list[list[Hit]]:  # pragma: no cover - abstract
        raise NotImplementedError

    def search(self, query: str, k: int | None = None) -> list[Hit]:
        """The best ``k`` hits (None: ``top_k``); a ``k`` below 1 is a ValueError."""
        return self.search_batch([query], self.cfg.top_k if k is None else k)[0]

    def _k(self, k: int) -> int:
        """At most every chunk: a top_k of 2**31 asks faiss to allocate results for chunks that do not exist. Below 1
        is an error, never read as 1 (or, for 0, as ``top_k``)."""
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        return min(int(k), len(self.store.nodes))

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=self.store.nodes[h.position], score=h.score)
                for h in self.search(query_bundle.query_str)]

class DenseRetriever(_StoreRetriever):
    name = "dense"

    def search_batch(self, queries: list[str], k: int) -> list[list[Hit]]:
        k = self._k(k)
        warn_query_cut_off(queries, self.embedder)
        vecs = self.embedder.embed(queries)
        if len(queries) == 1:  # the single-query path goes through llama-index's vector store
            query = VectorStoreQuery(query_embedding=vecs[0].tolist(), similarity_top_k=k)
            res = self.store.vector_store().query(query)
            pairs = [[(int(i), float(s)) for i, s in zip(res.ids or [], res.similarities or [])]]
        else:
            scores, pos = faiss_index.search(self.store.dense, vecs, k)
            pairs = [[(int(i), float(s)) for i, s in zip(p, sc) if i >= 0] for p, sc in zip(pos, scores)]
        return [[Hit(i, s, {"dense_score": s, "dense_rank": r}) for r, (i, s) in enumerate(row, 1)] for row in pairs]

class BM25Retriever(_StoreRetriever):
    name = "bm25"

    def search_batch(self, queries: list[str], k: int) -> list[list[Hit]]:
        if self.store.bm25 is None:
            raise RuntimeError(f"index at {self.store.index_dir} was built without BM25")
        return [[Hit(i, s, {"bm25_score": s, "bm25_rank": r}) for r, (i, s) in enumerate(row, 1)]
                for row in self.store.bm25.search_batch(queries, self._k(k))]

class HybridRetriever(_StoreRetriever):
    """Dense and BM25 candidates (``candidate_k`` each) fused by reciprocal rank fusion, or by a convex combination of
    their normalised scores (``fusion``: minmax / zscore, ``dense_weight``)."""

    name = "hybrid"

    def __init__(self, store: IndexStore, embedder, cfg: RetrievalConfig):
        super().__init__(store, embedder, cfg)
        self.dense = DenseRetriever(store, embedder, cfg)
        self.bm25 = BM25Retriever(store, embedder, cfg)

    def search_batch(self, queries: list[str], k: int) -> list[list[Hit]]:
        self._k(k)  # a k below 1 is refused, not widened to candidate_k
        n = max(k, self.cfg.candidate_k)  # dense and BM25 each clamp it to the corpus
        out = []
        for d_hits, b_hits in zip(self.dense.search_batch(queries, n), self.bm25.search_batch(queries, n)):
            signals: dict[int, dict[str, float]] = {}
            for h in [*d_hits, *b_hits]:
                signals.setdefault(h.position, {}).update(h.signals)
            # positions, not their strings, are fused: a tie left after the best rank goes to the earlier chunk ("10"
            # sorts before "9")
            if self.cfg.fusion == "rrf":
                fused = reciprocal_rank_fusion([[h.position for h in d_hits], [h.position for h in b_hits]],
                                               k=self.cfg.rrf_k)
            else:
                w = self.cfg.dense_weight
                fused = weighted_fusion([[(h.position, h.score) for h in d_hits],
                                         [(h.position, h.score) for h in b_hits]], [w, 1 - w], self.cfg.fusion)
            key = "rrf_score" if self.cfg.fusion == "rrf" else "fused_score"
            out.append([Hit(p, s, {**signals[p], key: s}) for p, s in fused[:k]])
        return out

RETRIEVERS = {"dense": DenseRetriever, "bm25": BM25Retriever, "hybrid": HybridRetriever}

def make_retriever(store: IndexStore, embedder, cfg: RetrievalConfig, mode: str | None = None) -> _StoreRetriever:
    mode = mode or cfg.mode
    if mode != "dense" and store.bm25 is None:
        warn(f"index at {store.index_dir} has no BM25 part: retrieval mode '{mode}' falls back to dense")
        mode = "dense"
    return RETRIEVERS[mode](store, embedder, cfg)

