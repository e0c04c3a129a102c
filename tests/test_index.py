"""Index build/load, manifest checks, faiss kinds and retrieval modes (fake embedder: no model needed)."""
import json

import pytest

from corpora.errors import InputError
from corpora.records import Document
from rag.config import ChunkingConfig, IndexConfig, RetrievalConfig
from rag.embeddings import FakeEmbedder
from rag.faiss_index import factory_string
from rag.manifest import IndexMismatch, check_build_settings, corpus_checksum, read_manifest
from rag.retrievers import make_retriever
from rag.store import build_index, ensure_index, load_index

TOPICS = ["pipeline bubble", "kv cache memory", "flashattention tiling", "speculative decoding draft",
          "lora adapter rank", "cuda graphs capture", "int4 quantization awq", "tensor parallel allreduce"]


def _docs(n=64):
    return [Document(id=f"d{i:02d}", title=TOPICS[i % len(TOPICS)],
                     text=f"This note {i} is about {TOPICS[i % len(TOPICS)]} and marker{i}. " * 4) for i in range(n)]


CH = ChunkingConfig(chunk_size=64, chunk_overlap=8)


@pytest.mark.parametrize("kind", ["flat", "ivf", "hnsw", "ivfpq", "sq8"])
def test_every_index_kind_builds_saves_and_finds_the_exact_document(tmp_path, kind):
    emb = FakeEmbedder()
    store = build_index(_docs(), tmp_path / "idx", emb, chunking=CH, index_cfg=IndexConfig(kind=kind, nlist=4, nprobe=4))
    assert store.manifest.n_chunks == len(store.nodes) == store.dense.ntotal
    reloaded = load_index(tmp_path / "idx", emb)
    hits = make_retriever(reloaded, emb, RetrievalConfig(mode="dense", top_k=3)).search("marker17 " + TOPICS[17 % 8])
    assert reloaded.nodes[hits[0].position].metadata["doc_id"] == "d17" or kind == "ivfpq"
    if kind == "ivfpq":  # lossy codes: the exact document must still be among the candidates
        hits = make_retriever(reloaded, emb, RetrievalConfig(mode="dense", top_k=10)).search("marker17 " + TOPICS[1])
        assert "d17" in {reloaded.nodes[h.position].metadata["doc_id"] for h in hits}


def test_manifest_records_build_settings(tmp_path):
    docs = _docs(10)
    build_index(docs, tmp_path / "idx", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())
    m = read_manifest(tmp_path / "idx")
    assert m.embedder_id == "fake-embedder-256" and m.dim == 256 and m.normalized
    assert m.chunking == CH and m.corpus_checksum == corpus_checksum(docs) and m.n_documents == 10
    assert check_build_settings(m, chunking=CH, checksum=corpus_checksum(docs)) == []
    changed = docs[:9] + [Document(id="d09", text="changed")]
    assert check_build_settings(m, chunking=CH, checksum=corpus_checksum(changed)) == ["corpus changed since the index was built"]


def test_querying_with_a_different_embedder_is_an_error_that_says_so(tmp_path):
    build_index(_docs(10), tmp_path / "idx", FakeEmbedder(256), chunking=CH, index_cfg=IndexConfig())
    with pytest.raises(IndexMismatch) as err:
        load_index(tmp_path / "idx", FakeEmbedder(128))
    msg = str(err.value)
    assert "fake-embedder-256" in msg and "fake-embedder-128" in msg and "dimension 256 vs 128" in msg
    assert "ragdoctor index --rebuild" in msg


def test_missing_or_corrupt_manifest(tmp_path):
    with pytest.raises(InputError, match="no index here"):
        load_index(tmp_path, FakeEmbedder())
    build_index(_docs(4), tmp_path / "idx", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())
    (tmp_path / "idx" / "manifest.json").write_text(json.dumps({"version": 1}))
    with pytest.raises(InputError, match="unreadable manifest"):
        load_index(tmp_path / "idx", FakeEmbedder())


def test_ensure_index_reuses_then_rebuilds_when_stale(tmp_path):
    docs = _docs(8)
    _, built = ensure_index(docs, tmp_path / "i", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())
    assert built
    _, built = ensure_index(docs, tmp_path / "i", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig(nprobe=3))
    assert not built  # search-time settings do not need a rebuild
    _, built = ensure_index(docs[:7], tmp_path / "i", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())
    assert built
    _, built = ensure_index(docs[:7], tmp_path / "i", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig(kind="hnsw"))
    assert built


def test_bm25_and_hybrid_modes(tmp_path):
    emb = FakeEmbedder()
    store = build_index(_docs(), tmp_path / "idx", emb, chunking=CH, index_cfg=IndexConfig())
    bm25 = make_retriever(store, emb, RetrievalConfig(mode="bm25", top_k=3)).search("marker42")
    assert store.nodes[bm25[0].position].metadata["doc_id"] == "d42"
    hybrid = make_retriever(store, emb, RetrievalConfig(mode="hybrid", top_k=4, candidate_k=10)).search("marker42 flashattention tiling")
    assert store.nodes[hybrid[0].position].metadata["doc_id"] == "d42"
    assert {"rrf_score", "bm25_rank"} <= set(hybrid[0].signals)
    scores = [h.score for h in hybrid]
    assert scores == sorted(scores, reverse=True)
    # llama-index retriever interface
    nodes = make_retriever(store, emb, RetrievalConfig(mode="hybrid", top_k=2)).retrieve("marker42")
    assert len(nodes) == 2 and nodes[0].node.metadata["doc_id"] == "d42"


def test_factory_strings_fit_small_corpora():
    assert factory_string(IndexConfig(kind="ivf", nlist=64), 100, 384) == "IVF2,Flat"
    assert factory_string(IndexConfig(kind="ivfpq", nlist=64), 100000, 384) == "IVF64,PQ48x8np"
    assert factory_string(IndexConfig(kind="ivfpq"), 100, 384).endswith("x5np")


def test_querying_commands_refuse_an_index_built_by_another_embedder(tmp_path):
    docs = _docs(8)
    ensure_index(docs, tmp_path / "i", FakeEmbedder(256), chunking=CH, index_cfg=IndexConfig())
    with pytest.raises(IndexMismatch, match="fake-embedder-256"):
        ensure_index(docs, tmp_path / "i", FakeEmbedder(128), chunking=CH, index_cfg=IndexConfig(), strict_embedder=True)
    _, built = ensure_index(docs, tmp_path / "i", FakeEmbedder(128), chunking=CH, index_cfg=IndexConfig())
    assert built  # `ragdoctor index` with another embedder rebuilds
