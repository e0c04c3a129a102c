"""ragdoctor.integrations.llamaindex on engines whose retriever finds nothing or whose LLM says nothing: llama-index
then answers its synthesizer's placeholder ("Empty Response"), which is recorded as an error, never judged as an
answer (no model: a retriever and an LLM defined here)."""
from __future__ import annotations

from eval.judges.lexical import LexicalScorer
from eval.judges.scorer import ScorerJudge
from eval.judging import evaluate


def _engines():
    from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata, MockLLM
    from llama_index.core.llms.callbacks import llm_completion_callback
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, TextNode

    class Nothing(BaseRetriever):
        def _retrieve(self, query_bundle):
            return []

    class One(BaseRetriever):
        def _retrieve(self, query_bundle):
            return [NodeWithScore(node=TextNode(text="The KV cache stores keys and values.", id_="kv#0"), score=0.5)]

    class Silent(CustomLLM):
        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata()

        @llm_completion_callback()
        def complete(self, prompt, formatted=False, **kwargs):
            return CompletionResponse(text="")

        @llm_completion_callback()
        def stream_complete(self, prompt, formatted=False, **kwargs):
            raise NotImplementedError

    return (RetrieverQueryEngine.from_args(Nothing(), llm=MockLLM(max_tokens=8)),
            RetrieverQueryEngine.from_args(One(), llm=Silent()),
            RetrieverQueryEngine.from_args(One(), llm=MockLLM(max_tokens=8)))


def test_llama_index_placeholder_answers_are_errors_not_scored(tmp_path):
    from ragdoctor.integrations import llamaindex

    nothing, silent, fine = _engines()
    with llamaindex.record([nothing, silent, fine], tmp_path / "run") as rec:
        assert nothing.query("What does the KV cache store?").response == llamaindex.EMPTY_RESPONSE
        silent.query("What does the KV cache store, again?")
        fine.query("And once more?")
    empty, mute, ok = rec.traces
    assert (empty.outcome, empty.answer, empty.contexts) == ("error", "", [])
    assert "'Empty Response'" in empty.error and "no node was retrieved" in empty.error
    assert mute.outcome == "error" and "the LLM returned no text" in mute.error
    assert [c.chunk_id for c in mute.contexts] == ["kv#0"]
    assert ok.outcome == "answered" and ok.answer
    ev = evaluate(rec.traces, metrics=["groundedness", "answer_relevance"], judges=[ScorerJudge(LexicalScorer())],
                  run=tmp_path / "ev", progress=False)
    by = {j.sample_id: {r.metric: r for r in j.results} for j in ev.judgements}
    for t in (empty, mute):  # never a 0 for an answer the engine did not give
        assert {r.status for r in by[t.sample_id].values()} == {"unmeasured"}
    assert by[ok.sample_id]["groundedness"].status == "ok"
