"""A user's own llama-index pipeline as the tests stand it in: a VectorStoreIndex over the bundled corpus, embedded by
the bundled MiniLM through llama-index's HuggingFaceEmbedding, answered by a fake LLM (no model server)."""
from __future__ import annotations

from typing import Any

from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback


class FirstSentenceLLM(CustomLLM):
    """Answers with the first sentence of the first context in its prompt: deterministic, and grounded."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="first-sentence-fake")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        body = prompt.split("---------------------\n", 1)[-1]
        lines = [ln for ln in body.splitlines() if ln.strip() and not ln.startswith(("title:", "doc_id:"))]
        first = lines[0] if lines else "I don't know."
        return CompletionResponse(text=first.split(". ")[0].rstrip(".") + ".")

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any):
        yield self.complete(prompt)


def bundled_index(limit: int | None = None):
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    from corpora.bundled import bundled_documents
    from rag.models import minilm_path

    docs = [Document(text=d.text, doc_id=d.id, metadata={"title": d.title, "doc_id": d.id},
                     excluded_llm_metadata_keys=["doc_id"], excluded_embed_metadata_keys=["doc_id"])
            for d in bundled_documents()[:limit]]
    return VectorStoreIndex.from_documents(docs, embed_model=HuggingFaceEmbedding(model_name=str(minilm_path())))


def keep_top_reranker(top_n: int):
    """A node postprocessor that reranks as llama-index's own rerankers do (ReRankStart/End events around its work):
    it keeps the ``top_n`` best-scored nodes, best last first (so its order differs from the retriever's)."""
    from llama_index.core.instrumentation import get_dispatcher
    from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
    from llama_index.core.postprocessor.types import BaseNodePostprocessor

    dispatcher = get_dispatcher(__name__)

    class KeepTop(BaseNodePostprocessor):
        def _postprocess_nodes(self, nodes, query_bundle=None):
            dispatcher.event(ReRankStartEvent(query=query_bundle, nodes=nodes, top_n=top_n, model_name="keep-top"))
            kept = sorted(nodes, key=lambda n: n.score or 0.0, reverse=True)[:top_n][::-1]
            dispatcher.event(ReRankEndEvent(nodes=kept))
            return kept

    return KeepTop()
