"""The pipeline (rag/pipeline.py) on a five-document index with the fake embedder and the fake LLM: what a trace
records, the cut between contexts and candidates, errors as data. Fast: no model."""
import pytest

from corpora.records import Document, Question
from rag.config import PipelineConfig
from rag.embeddings import FakeEmbedder
from rag.llm import FakeLLM
from rag.pipeline import Pipeline
from rag.store import build_index

DOCS = [Document(id=f"d{i}", text=text, title=f"T{i}") for i, text in enumerate([
    "The KV cache stores keys and values for every token.", "FlashAttention tiles the attention computation.",
    "Ring all-reduce sends about twice the gradient size.", "LoRA adds low-rank adapters to frozen weights.",
    "Paged attention stores the KV cache in fixed-size blocks."])]


@pytest.fixture(scope="module")
def pipe(tmp_path_factory):
    cfg = PipelineConfig.model_validate({"retrieval": {"top_k": 2, "candidate_k": 4, "mode": "hybrid", "fusion": "rrf",
                                                       "rerank": False},
                                         "embedding": {"model": "fake"}})
    store = build_index(DOCS, tmp_path_factory.mktemp("idx") / "i", FakeEmbedder(), chunking=cfg.chunking,
                        index_cfg=cfg.index)
    return Pipeline(cfg, store, FakeEmbedder(), FakeLLM())


def test_a_trace_records_the_question_the_cut_and_the_latency(pipe):
    q = Question(id="q", question="What does the KV cache store?", reference="Keys and values.",
                 relevant_doc_ids=["d0"], metadata={"kind": "factoid"})
    t = pipe.answer(q.question, q)
    assert (t.sample_id, t.reference, t.relevant_doc_ids, t.metadata) == ("q", q.reference, ["d0"], q.metadata)
    assert [c.rank for c in t.chunks] == [1, 2] and [c.rank for c in t.candidates] == [3, 4]
    assert t.chunks[0].doc_id == "d0" and "rrf_score" in t.chunks[0].signals and t.candidates[0].signals
    assert set(t.latency_ms) == {"retrieve", "generate", "total"} and t.config_hash == pipe.config_hash
    assert t.outcome == "answered" and t.cited_chunk_ids == ["d0#0"] and t.prompt[-1]["role"] == "user"


def test_a_refusal_and_a_failed_generator_are_outcomes(pipe):
    assert pipe.answer("Who won the 1930 world cup?").outcome == "refused"

    class Broken:
        model_id = "broken"

        def chat(self, *a, **k):
            raise RuntimeError("server went away")

    broken = Pipeline(pipe.cfg, pipe.store, pipe.embedder, Broken())
    t = broken.answer("What does the KV cache store?")
    assert t.outcome == "error" and t.error == "RuntimeError: server went away" and t.contexts


def test_chunks_of_documents_in_order(pipe):
    assert [c.chunk_id for c in pipe.chunks_of(["d4", "d0"])] == ["d0#0", "d4#0"]
