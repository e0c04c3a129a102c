"""Retrieval on degenerate corpora, queries and options (fake embedder, fake LLM, fake reranker: no model): one chunk,
top-k past the corpus, k below 1, identical chunks, queries BM25 reads nothing in, non-Latin text, IVF kinds on fewer
vectors than they have lists, NaN or zero vectors and NaN reranker logits. Every score that comes back is a finite
float, and every trace reads back as it was written."""
import json
import math

import numpy as np
import pytest

from corpora.records import Document, Trace
from rag.config import ChunkingConfig, IndexConfig, PipelineConfig, RetrievalConfig
from rag.embeddings import FakeEmbedder
from rag.faiss_index import factory_string
from rag.llm import FakeLLM
from rag.pipeline import Pipeline
from rag.reranker import RerankStage
from rag.retrievers import Hit, make_retriever
from rag.store import build_index, load_index

CH = ChunkingConfig(chunk_size=64, chunk_overlap=8)
EMB = FakeEmbedder()
MODES = [("dense", "zscore"), ("bm25", "zscore"), ("hybrid", "zscore"), ("hybrid", "minmax"), ("hybrid", "rrf")]
ODD_QUERIES = ["the of and", "???", "", "x " * 5000, "pipeline bubble " * 2000]


def _store(tmp_path, docs, kind="flat", **index):
    return build_index(docs, tmp_path / "idx", EMB, chunking=CH, index_cfg=IndexConfig(kind=kind, **index))


def _cfg(mode, fusion, **kw):
    return RetrievalConfig(mode=mode, fusion=fusion, rerank=False, **kw)


def _finite(hits):
    return all(math.isfinite(h.score) and all(math.isfinite(v) for v in h.signals.values()) for h in hits)


@pytest.fixture(scope="module")
def one(tmp_path_factory):
    return _store(tmp_path_factory.mktemp("one"), [Document(id="a", text="The pipeline bubble is idle time.")])


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    return _store(tmp_path_factory.mktemp("two"), [Document(id="a", text="The pipeline bubble is idle time."),
                                                   Document(id="b", text="The KV cache grows with the context.")])


@pytest.fixture(scope="module")
def same(tmp_path_factory):
    docs = [Document(id=f"d{i}", text="Identical text about caches.") for i in range(4)]
    return _store(tmp_path_factory.mktemp("same"), docs)


@pytest.mark.parametrize("mode,fusion", MODES)
def test_one_chunk_and_a_top_k_past_the_corpus_give_each_chunk_once(one, two, mode, fusion):
    for store, n in [(one, 1), (two, 2)]:
        r = make_retriever(store, EMB, _cfg(mode, fusion, top_k=5, candidate_k=5))
        for query in ["pipeline bubble", "KV cache context"]:
            single, batch = r.search(query, 5), r.search_batch([query, "idle"], 5)[0]
            for hits in (single, batch):
                positions = [h.position for h in hits]
                assert len(positions) == len(set(positions)) and set(positions) <= set(range(n)), positions
                assert _finite(hits)
            assert [(h.position, h.score) for h in single] == [(h.position, h.score) for h in batch]
            if mode != "bm25":  # dense (and fused) lists hold every chunk; BM25 only the ones a query word is in
                assert len(single) == n


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
@pytest.mark.parametrize("k", [0, -1, -5])
def test_a_k_below_one_is_an_error_not_one_hit_or_top_k(two, mode, k):
    r = make_retriever(two, EMB, _cfg(mode, "zscore", top_k=2))
    with pytest.raises(ValueError, match="k must be >= 1"):
        r.search("pipeline bubble", k)
    with pytest.raises(ValueError, match="k must be >= 1"):
        r.search_batch(["pipeline bubble"], k)
    assert len(r.search("pipeline bubble")) >= 1  # None still means top_k


@pytest.mark.parametrize("flag", ["--top-k=0", "--top-k=-3"])
def test_the_cli_refuses_a_top_k_below_one_in_one_line(tmp_path, capsys, flag):
    from ragdoctor.cli import main

    with pytest.raises(SystemExit) as exit_:  # argparse stops it before any work
        main(["ask", "What is a pipeline bubble?", "--embedder", "fake", "--index-dir", str(tmp_path / "i"), flag])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--top-k" in err[0] and ">= 1" in err[0]


@pytest.mark.parametrize("mode,fusion", MODES)
def test_identical_chunks_tie_in_a_deterministic_order_with_finite_scores(same, mode, fusion):
    r = make_retriever(same, EMB, _cfg(mode, fusion, top_k=4, candidate_k=4))
    runs = [[(h.position, h.score) for h in r.search("caches", 4)] for _ in range(3)]
    runs.append([(h.position, h.score) for h in r.search_batch(["caches", "text"], 4)[0]])
    assert all(run == runs[0] for run in runs)
    assert [p for p, _ in runs[0]] == [0, 1, 2, 3]  # corpus order (dense and BM25 gave the copies last first)
    for k in (1, 2, 3):
        assert [h.position for h in r.search("caches", k)] == list(range(k))  # the cut keeps the earliest copies
    assert len({s for _, s in runs[0]}) == (4 if fusion == "rrf" and mode == "hybrid" else 1)  # RRF reads ranks
    assert all(math.isfinite(s) for _, s in runs[0])


@pytest.mark.parametrize("fusion", ["rrf", "minmax", "zscore"])
def test_a_hybrid_tie_left_after_the_best_rank_goes_to_the_earlier_chunk(two, fusion):
    """Chunks 9 and 10 each first in one list and second in the other tie on every fusion's score and best rank;
    the positions were fused as strings, and "10" sorts before "9"."""
    r = make_retriever(two, EMB, _cfg("hybrid", fusion, top_k=2, candidate_k=2))
    r.dense.search_batch = lambda queries, k: [[Hit(10, 0.9), Hit(9, 0.5)] for _ in queries]
    r.bm25.search_batch = lambda queries, k: [[Hit(9, 3.0), Hit(10, 1.0)] for _ in queries]
    hits = r.search("pipeline bubble", 2)
    assert [h.position for h in hits] == [9, 10] and hits[0].score == hits[1].score


@pytest.mark.parametrize("mode,fusion", MODES)
def test_queries_bm25_reads_nothing_in_give_finite_scores(one, two, same, mode, fusion):
    """Stopwords, punctuation, empty, far past the embedder's length: BM25 scores nothing (no hits), and fusion with
    a list of nothing, or of tied scores (z-score with no variance), stays finite."""
    for store in (one, two, same):
        r = make_retriever(store, EMB, _cfg(mode, fusion, top_k=5, candidate_k=5))
        for query in ODD_QUERIES:
            hits = r.search(query, 5)
            assert _finite(hits), (query[:20], hits)
            if mode == "bm25" and "pipeline" not in query:  # stopwords, punctuation, one-letter words, nothing
                assert hits == []


@pytest.mark.parametrize("docs,query,want", [
    (["Кэш ключей и значений растёт с длиной контекста.", "Конвейерный пузырь это простой."], "кэш контекста", 0),
    (["ذاكرة التخزين المؤقت تنمو مع طول السياق", "فقاعة خط الأنابيب وقت خامل"], "فقاعة الأنابيب", 1),
    (["Η κρυφή μνήμη μεγαλώνει", "Η φυσαλίδα είναι αδράνεια"], "μνήμη", 0),
    (["键值缓存随上下文长度增长", "流水线气泡是空闲时间"], "流水线气泡", 1)])
def test_a_corpus_of_non_latin_text_is_searched_by_bm25_and_hybrid(tmp_path, docs, query, want):
    store = _store(tmp_path, [Document(id=f"d{i}", text=t) for i, t in enumerate(docs)])
    assert store.bm25 is not None
    bm25 = make_retriever(store, EMB, _cfg("bm25", "zscore")).search(query, 5)
    assert [h.position for h in bm25][:1] == [want] and all(h.score > 0 for h in bm25) and _finite(bm25)
    for fusion in ("zscore", "minmax", "rrf"):
        hybrid = make_retriever(store, EMB, _cfg("hybrid", fusion)).search(query, 5)
        assert hybrid[0].position == want and _finite(hybrid)


@pytest.mark.parametrize("kind", ["ivf", "ivfpq"])
def test_ivf_kinds_on_fewer_vectors_than_lists_say_so_once_and_find_the_chunk(tmp_path, capfd, caplog, kind):
    """Before: IVF-PQ over one chunk raised faiss's RuntimeError (exit 3 from `ragdoctor index`), and faiss printed
    its own k-means warning on stderr (33 lines for IVF-PQ over two chunks)."""
    docs = [Document(id="a", text="The pipeline bubble is idle time.")]
    with caplog.at_level("WARNING", logger="ragdoctor.notices"):
        store = _store(tmp_path / "one", docs, kind=kind)
        store2 = _store(tmp_path / "two", [*docs, Document(id="b", text="The KV cache grows.")], kind=kind)
    assert "WARNING clustering" not in capfd.readouterr().err
    notes = [r.getMessage() for r in caplog.records]
    assert len(notes) == 2 and all(f"index kind '{kind}'" in n for n in notes), notes
    assert store.manifest.factory == "IVF1,Flat"  # IVF-PQ over one vector: no codes to train
    assert store2.manifest.factory.startswith("IVF1,") and store2.dense.ntotal == 2
    for s in (store, load_index(tmp_path / "one" / "idx", EMB)):
        hits = make_retriever(s, EMB, _cfg("dense", "zscore")).search("pipeline bubble", 5)
        assert [h.position for h in hits] == [0] and _finite(hits)


def test_small_corpus_note_speaks_only_for_an_ivf_that_is_an_exhaustive_search():
    from rag.faiss_index import small_corpus_note

    assert small_corpus_note(IndexConfig(kind="flat"), 1) is None
    assert small_corpus_note(IndexConfig(kind="hnsw"), 1) is None
    assert small_corpus_note(IndexConfig(kind="ivf", nlist=64), 5000) is None  # 64 lists train
    assert small_corpus_note(IndexConfig(kind="ivf", nlist=1), 5) is None  # one list is what was asked
    assert "1 inverted list instead of nlist=64" in small_corpus_note(IndexConfig(kind="ivf", nlist=64), 77)
    assert small_corpus_note(IndexConfig(kind="ivf", nlist=64), 78) is None  # 2 lists of 39
    assert "exact search" in small_corpus_note(IndexConfig(kind="ivfpq"), 1)
    assert factory_string(IndexConfig(kind="ivfpq"), 1, 384) == "IVF1,Flat"
    assert factory_string(IndexConfig(kind="ivfpq"), 2, 384) == "IVF1,PQ48x1np,Refine(SQ8)"


def test_the_ivfpq_index_command_on_one_document_exits_0_with_one_warning(tmp_path, capfd):
    from ragdoctor.cli import main

    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "a", "text": "The pipeline bubble is idle time."}) + "\n")
    args = ["index", "--embedder", "fake", "--corpus", str(corpus), "--index-dir", str(tmp_path / "i"), "--kind"]
    assert main([*args, "ivfpq"]) == 0
    err = capfd.readouterr().err
    assert "WARNING clustering" not in err and "Traceback" not in err
    assert len([ln for ln in err.splitlines() if "ivfpq" in ln]) == 1


class _OddVectors(FakeEmbedder):
    """The fake embedder, except that a text with "nan" / "inf" / "zero" in it embeds to that."""

    def embed(self, texts):
        out = super().embed(texts)
        for i, t in enumerate(texts):
            for word, value in (("nan", np.nan), ("inf", np.inf), ("zero", 0.0)):
                if word in t.lower():
                    out[i] = value
        return out


class _Logits:
    """A reranker scoring the passages in order from ``values`` (repeated)."""

    name = model_id = "fake-reranker"
    runs_in = "fp32"

    def __init__(self, values):
        self.values = values

    def score(self, question, passages):
        return np.resize(np.asarray(self.values, dtype=np.float32), len(passages))


@pytest.mark.parametrize("mode,fusion", MODES[:1] + MODES[2:])
def test_nan_inf_or_zero_query_vectors_leave_no_nan_in_a_trace(tmp_path, mode, fusion):
    cfg = PipelineConfig.model_validate({"retrieval": {"top_k": 5, "candidate_k": 5, "mode": mode, "fusion": fusion,
                                                       "rerank": False}, "embedding": {"model": "fake"}})
    emb = _OddVectors(model_id="fake-embedder")
    store = build_index([Document(id="a", text="The KV cache stores keys and values."),
                         Document(id="b", text="LoRA adds low-rank adapters.")], tmp_path / "i", emb,
                        chunking=cfg.chunking, index_cfg=cfg.index)
    pipe = Pipeline(cfg, store, emb, FakeLLM())
    for question in ["KV cache nan", "KV cache inf", "KV cache zero"]:
        trace = pipe.answer(question)
        text = trace.model_dump_json()
        assert "NaN" not in text and "Infinity" not in text and '"score":null' not in text
        assert Trace.model_validate_json(text).model_dump_json() == text
        assert all(math.isfinite(c.score) for c in [*trace.contexts, *trace.candidates])


@pytest.mark.parametrize("weight", [1.0, 0.25, 0.0])
def test_the_reranker_on_one_candidate_keeps_it_with_a_finite_score(weight):
    stage = RerankStage(RetrievalConfig(rerank_weight=weight), reranker=_Logits([3.5]))
    out = stage.apply("q", [Hit(7, 0.42, {"dense_score": 0.42})], lambda h: "passage")
    assert [h.position for h in out] == [7] and _finite(out)
    assert out[0].signals["rerank_score"] == 3.5 and out[0].signals["first_stage_rank"] == 1.0
    assert stage.apply("q", [], lambda h: "passage") == []


@pytest.mark.parametrize("weight", [1.0, 0.25])
@pytest.mark.parametrize("logits", [[float("nan"), 1.0, 2.0], [float("inf"), 1.0, 2.0], [1.0, float("-inf"), 0.0]])
def test_a_nan_or_inf_reranker_logit_keeps_the_first_stage_order_and_says_so(caplog, weight, logits):
    """Before: weight 1 put the NaN first with score NaN; below 1 every candidate's score was NaN (min-max over NaN or
    inf), written into the trace as null, which the trace cannot be read back with."""
    hits = [Hit(i, 1.0 - i / 10, {"dense_score": 1.0 - i / 10}) for i in range(3)]
    stage = RerankStage(RetrievalConfig(rerank_weight=weight), reranker=_Logits(logits))
    with caplog.at_level("WARNING", logger="ragdoctor.notices"):
        out = stage.apply("q", hits, lambda h: "passage")
    assert [(h.position, h.score) for h in out] == [(0, 1.0), (1, 0.9), (2, 0.8)] and _finite(out)
    assert all("rerank_score" not in h.signals for h in out)
    assert any("NaN or inf" in r.getMessage() for r in caplog.records)


def test_a_pipeline_with_a_nan_reranker_writes_a_trace_that_reads_back(two):
    cfg = PipelineConfig.model_validate({"retrieval": {"top_k": 1, "candidate_k": 5, "rerank": False},
                                         "embedding": {"model": "fake"}})
    pipe = Pipeline(cfg, two, EMB, FakeLLM())
    pipe.rerank = RerankStage(RetrievalConfig(), reranker=_Logits([float("nan")]))
    trace = pipe.answer("What is the pipeline bubble?")
    text = trace.model_dump_json()
    ranked = [*trace.contexts, *trace.candidates]
    assert len(ranked) == 2 and all(math.isfinite(v) for c in ranked for v in [c.score, *c.signals.values()])
    assert Trace.model_validate_json(text).model_dump_json() == text
