"""Small edges of retrieval: a question longer than the embedder reads is said to be cut (once, not per question),
and vectors holding NaN or inf are warned about at build time (the build goes on)."""
import numpy as np
import pytest

from corpora.records import Document
from rag import store as store_module
from rag.config import ChunkingConfig, IndexConfig, RetrievalConfig
from rag.embeddings import FakeEmbedder
from rag.faiss_index import build
from rag.retrievers import make_retriever
from rag.store import build_index

CUT = "tokens the embedder reads (its max_seq_length): dense retrieval embeds its start only"


class _ShortInputEmbedder(FakeEmbedder):
    """The fake embedder with a real model's tokenizer and an input limit (MiniLM reads 256 tokens)."""

    max_seq_length = 32

    @property
    def tokenizer_dir(self):
        from rag.models import minilm_path
        return str(minilm_path())


def _docs(n=8):
    return [Document(id=f"d{i}", title=f"T{i}", text=f"note {i} about caching and marker{i}.") for i in range(n)]


def _said(caplog, part):
    return [r.getMessage() for r in caplog.records if part in r.getMessage()]


def _fresh_retriever(tmp_path, emb, mode, caplog, monkeypatch):
    """A top-2 retriever over _docs() in a process that has warned about no long question yet, warnings captured."""
    monkeypatch.setattr(store_module, "_queries_cut", set())
    store = build_index(_docs(), tmp_path / "i", emb, chunking=ChunkingConfig(chunk_size=16, chunk_overlap=2),
                        index_cfg=IndexConfig())
    caplog.set_level("WARNING")
    return make_retriever(store, emb, RetrievalConfig(mode=mode, top_k=2))


def test_a_question_longer_than_the_embedder_reads_is_said_once_with_its_token_count(tmp_path, caplog, monkeypatch):
    retriever = _fresh_retriever(tmp_path, _ShortInputEmbedder(), "hybrid", caplog, monkeypatch)
    retriever.search("what is caching?")  # short: nothing said, nothing tokenized past the byte bound
    assert not _said(caplog, CUT)
    long = "why " * 40  # 40 words: 42 tokens with [CLS] and [SEP]
    retriever.search(long)
    retriever.search_batch([long, "caching " * 60], k=2)
    said = _said(caplog, CUT)
    assert len(said) == 1, said  # once a process, not per question
    assert "a question of 42 tokens is longer than the 32 tokens" in said[0]


def test_the_fake_embedder_says_no_limit_so_no_question_is_checked(tmp_path, caplog, monkeypatch):
    _fresh_retriever(tmp_path, FakeEmbedder(), "dense", caplog, monkeypatch).search("why " * 1000)
    assert not _said(caplog, "tokens the embedder reads")


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_vectors_holding_nan_or_inf_are_warned_about_once_and_the_build_goes_on(caplog, kind):
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((20, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors[3, 0], vectors[7, 5], vectors[9, 2] = np.nan, np.inf, -np.inf
    caplog.set_level("WARNING")
    index = build(vectors, IndexConfig(kind=kind), [f"c{i}" for i in range(20)])
    assert index.ntotal == 20
    said = _said(caplog, "NaN or inf")
    assert len(said) == 1, said
    assert "3 of 20 chunk vectors hold NaN or inf ('c3', 'c7', 'c9')" in said[0]
    caplog.clear()
    build(vectors, IndexConfig(kind=kind))  # no ids at hand: rows are named
    assert "(row 3, row 7, row 9)" in _said(caplog, "NaN or inf")[0]
    caplog.clear()
    build(np.nan_to_num(vectors, nan=0.0, posinf=0.0, neginf=0.0), IndexConfig(kind=kind))
    assert not _said(caplog, "NaN or inf")


def test_a_built_index_names_the_chunks_whose_vectors_are_nan(tmp_path, caplog):
    class _NaNEmbedder(FakeEmbedder):
        def embed(self, texts):
            out = super().embed(texts)
            out[[i for i, t in enumerate(texts) if "marker2" in t]] = np.nan
            return out

    caplog.set_level("WARNING")
    store = build_index(_docs(), tmp_path / "i", _NaNEmbedder(), chunking=ChunkingConfig(chunk_size=64,
                        chunk_overlap=8), index_cfg=IndexConfig())
    assert store.dense.ntotal == len(store.nodes)
    said = _said(caplog, "NaN or inf")
    assert len(said) == 1 and "1 of 8 chunk vectors hold NaN or inf ('d2#0')" in said[0], said
