"""Retrievers (rag/retrievers.py) on a small real index: the bundled MiniLM, real BM25, the bundled reranker. One
chunk's text in three documents ties in every score, and ties go in corpus order, the earlier chunk first, in every
path (dense single and batch, BM25, hybrid by each fusion, reranked), at every k."""
import pytest

from corpora.records import Document
from rag.config import ChunkingConfig, IndexConfig, RetrievalConfig
from rag.embeddings import make_embedder
from rag.reranker import RerankStage
from rag.retrievers import make_retriever
from rag.store import build_index

pytestmark = pytest.mark.model

COPY = "Paged attention splits the KV cache into fixed-size blocks, so memory is not fragmented."
OTHER = ["Continuous batching adds new requests between decoding steps.", "Ring all-reduce sends twice the gradient.",
         "FlashAttention tiles attention to save memory traffic.", "ZeRO stage 2 partitions optimizer states.",
         "Speculative decoding drafts tokens with a small model.", "Tensor parallelism splits each weight matrix.",
         "Quantization stores weights in fewer bits.", "Pipeline bubbles are idle time between micro-batches.",
         "LoRA trains low-rank adapters beside frozen weights."]
AT = (1, 5, 10)  # the copies' places in the corpus: position 10 sorts before 9 as a string
MODES = [("dense", "rrf"), ("bm25", "rrf"), ("hybrid", "rrf"), ("hybrid", "minmax"), ("hybrid", "zscore")]


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    texts = iter(OTHER)
    docs = [Document(id=f"d{i:02d}", title="Serving notes", text=COPY if i in AT else next(texts)) for i in range(12)]
    embedder = make_embedder("minilm", device="cpu")
    store = build_index(docs, tmp_path_factory.mktemp("copies") / "idx", embedder,
                        chunking=ChunkingConfig(chunk_size=64, chunk_overlap=8), index_cfg=IndexConfig())
    assert [n.metadata["doc_id"] for n in store.nodes] == [d.id for d in docs]  # one chunk a document
    return store, embedder


@pytest.mark.parametrize("mode,fusion", MODES)
def test_a_text_in_three_documents_comes_back_in_corpus_order_at_every_k(index, mode, fusion):
    store, embedder = index
    r = make_retriever(store, embedder, RetrievalConfig(mode=mode, fusion=fusion, rerank=False, candidate_k=12))
    question = "How does paged attention split the KV cache into blocks?"
    for k in (1, 2, 3, 4):
        single, batch = r.search(question, k), r.search_batch([question, "What is LoRA?"], k)[0]
        assert [h.position for h in single][:3] == list(AT[:k])
        assert [(h.position, h.score) for h in batch] == [(h.position, h.score) for h in single]
    scores = [h.score for h in r.search(question, 3)]
    assert scores[0] == scores[1] == scores[2] or (mode, fusion) == ("hybrid", "rrf")  # RRF reads the ranks


@pytest.mark.parametrize("weight", [1.0, 0.25])
def test_reranked_copies_keep_corpus_order(index, weight):
    store, embedder = index
    cfg = RetrievalConfig(mode="hybrid", fusion="minmax", rerank=True, rerank_depth=6, rerank_weight=weight)
    hits = make_retriever(store, embedder, cfg).search("How does paged attention split the KV cache?", 6)
    out = RerankStage(cfg).apply("How does paged attention split the KV cache?", hits,
                                 lambda h: store.nodes[h.position].text)
    assert [h.position for h in out][:3] == list(AT)
    assert out[0].signals["rerank_score"] == out[1].signals["rerank_score"] == out[2].signals["rerank_score"]
