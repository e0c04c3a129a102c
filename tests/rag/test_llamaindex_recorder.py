"""The llama-index recorder (rag/llamaindex_recorder.py) on a real llama-index query engine over the bundled corpus
with the bundled MiniLM and a fake LLM: the README's three lines, concurrent and nested queries, a chat engine with no
retrieval, a failing query, and `ragdoctor eval` over what it wrote."""
from __future__ import annotations

import asyncio
import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from corpora.bundled import bundled_questions
from corpora.run_folder import RunFolder
from ragdoctor.cli import main
from ragdoctor.integrations import llamaindex
from tests.rag.llama_engine import FirstSentenceLLM, bundled_index

pytestmark = pytest.mark.slow  # the bundled MiniLM embeds the corpus (about 10 s on a laptop CPU)
README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.fixture(scope="module")
def index():
    return bundled_index()


def readme_block() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("### Bring your own pipeline", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_example_records_its_query_and_eval_reads_it(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = readme_block()
    assert code.count("llamaindex") == 2 and "record(" in code  # the three lines are there, not a variant of them
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)  # noqa: S102 - the README's own example, run as a user would
    scope["recorder"].close()
    traces = RunFolder("runs/my-engine").traces.read()
    assert len(traces) == 1
    t = traces[0]
    assert t.question == "What does PagedAttention store in fixed-size blocks?"
    assert t.answer == "text " * 23 + "text"  # MockLLM(max_tokens=24)
    assert [c.rank for c in t.contexts] == [1, 2, 3] and all(c.doc_id and c.text and c.score for c in t.contexts)
    assert any("paged-attention" in c.doc_id for c in t.contexts)
    assert t.prompt and "PagedAttention store in fixed-size blocks" in t.prompt[-1]["content"]
    assert {"retrieve", "generate", "total"} <= set(t.latency_ms) and t.latency_ms["total"] >= t.latency_ms["retrieve"]
    assert main(["eval", "runs/my-engine/traces.jsonl", "--judges", "lexical"]) == 0
    summary = json.loads(Path("runs/my-engine/summary.json").read_text())
    measured = {m["metric"] for m in summary["metrics"] if m["n"] == 1}
    assert {"groundedness", "context_precision", "answer_relevance"} <= measured
    capsys.readouterr()


def test_concurrent_queries_each_make_one_trace_with_their_own_nodes(index, tmp_path):
    engine = index.as_query_engine(llm=FirstSentenceLLM(), similarity_top_k=2)
    questions = bundled_questions()[:8]
    with llamaindex.record(engine, tmp_path / "run", questions=questions) as rec:
        with ThreadPoolExecutor(4) as pool:
            threaded = list(pool.map(engine.query, [q.question for q in questions[:4]]))

        async def together():
            return await asyncio.gather(*(engine.aquery(q.question) for q in questions[4:]))

        awaited = asyncio.run(together())
    assert not rec.failures
    traces = {t.sample_id: t for t in RunFolder(tmp_path / "run").traces.read()}
    assert sorted(traces) == sorted(q.id for q in questions)  # one trace per query, none merged, none lost
    for q, response in zip(questions, [*threaded, *awaited]):
        t = traces[q.id]
        assert t.question == q.question and t.reference == q.reference and t.relevant_doc_ids == q.relevant_doc_ids
        assert [c.chunk_id for c in t.contexts] == [n.node.node_id for n in response.source_nodes]
        assert t.answer == response.response and t.outcome == "answered"
        assert q.question in t.prompt[-1]["content"] and t.generator == "first-sentence-fake"


def test_nested_engines_make_one_trace_for_the_outer_query(index, tmp_path):
    from llama_index.core.query_engine import CustomQueryEngine

    inner_a = index.as_query_engine(llm=FirstSentenceLLM(), similarity_top_k=1)
    inner_b = index.as_query_engine(llm=FirstSentenceLLM(), similarity_top_k=2)

    inner: list = []

    class TwoEngines(CustomQueryEngine):
        def custom_query(self, query_str: str) -> str:
            inner.extend([inner_a.query(query_str), inner_b.query(query_str + " in vLLM")])
            return " ".join(r.response for r in inner)

    outer = TwoEngines()
    with llamaindex.record(None, tmp_path / "run") as rec:
        answer = outer.query("What does PagedAttention page?")
    traces = RunFolder(tmp_path / "run").traces.read()
    assert len(traces) == 1 and not rec.failures
    t = traces[0]
    assert t.metadata["engine"] == "TwoEngines" and t.answer == str(answer)
    both = list(dict.fromkeys(n.node.node_id for r in inner for n in r.source_nodes))  # the two inner retrievals
    assert [c.chunk_id for c in t.chunks] == both and [c.rank for c in t.chunks] == list(range(1, len(both) + 1))
    assert t.latency_ms["generate"] > 0 and t.latency_ms["total"] >= t.latency_ms["retrieve"]


def test_only_the_named_engine_is_recorded_and_close_stops(index, tmp_path):
    watched = index.as_query_engine(llm=FirstSentenceLLM(), similarity_top_k=1)
    other = index.as_query_engine(llm=FirstSentenceLLM(), similarity_top_k=1)
    rec = llamaindex.record(watched, tmp_path / "run")
    watched.query("What is FlashAttention?")
    other.query("What is LoRA?")
    rec.close()
    watched.query("What is ZeRO?")
    assert [t.question for t in RunFolder(tmp_path / "run").traces.read()] == ["What is FlashAttention?"]


def test_a_chat_engine_without_retrieval_says_so_and_a_failing_query_is_an_error(index, tmp_path, capsys):
    from llama_index.core.chat_engine import SimpleChatEngine
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import CustomQueryEngine

    class Broken(CustomQueryEngine):
        def custom_query(self, query_str: str) -> str:
            raise RuntimeError("the vector store is down")

    chat = SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=5))
    with llamaindex.record([chat, Broken()], tmp_path / "run"):
        chat.chat("Hello there?")
        with pytest.raises(RuntimeError):
            rec_engine = next(iter([Broken()]))  # a second instance is not watched: nothing recorded for it
            rec_engine.query("Not recorded?")
    traces = RunFolder(tmp_path / "run").traces.read()
    assert [t.question for t in traces] == ["Hello there?"]
    t = traces[0]
    assert t.contexts is None and t.metadata["contexts_missing"] == llamaindex.NO_RETRIEVAL
    assert t.answer == "text text text text text" and t.prompt == [{"role": "user", "content": "Hello there?"}]  # the chat call's messages,
    assert t.latency_ms["generate"] < t.latency_ms["total"]  # not the completion it made of them, nor counted twice

    broken = Broken()
    with llamaindex.record(broken, tmp_path / "run2"):
        with pytest.raises(RuntimeError):
            broken.query("Will it fail?")
    failed = RunFolder(tmp_path / "run2").traces.read()[0]
    assert failed.outcome == "error" and failed.error == "RuntimeError: the vector store is down"

    assert main(["eval", str(tmp_path / "run" / "traces.jsonl"), "--judges", "lexical",
                 "--metrics", "groundedness,answer_relevance"]) == 0
    judged = json.loads((tmp_path / "run" / "results.jsonl").read_text().splitlines()[-1])
    got = {r["metric"]: r for r in judged["results"]}
    assert got["groundedness"]["status"] == "unmeasured"
    assert got["groundedness"]["reason"] == f"no contexts in the input record: {llamaindex.NO_RETRIEVAL}"
    assert got["answer_relevance"]["status"] == "ok"  # judged with what it has
    capsys.readouterr()


def test_a_streamed_answer_is_recorded_as_an_error_saying_why_and_a_foreign_log_is_refused(index, tmp_path):
    from corpora.errors import InputError

    engine = index.as_query_engine(llm=FirstSentenceLLM(), similarity_top_k=2, streaming=True)
    with llamaindex.record(engine, tmp_path / "run"):
        streamed = engine.query("What is FlashAttention?")
        "".join(streamed.response_gen)
    (t,) = RunFolder(tmp_path / "run").traces.read()
    assert t.outcome == "error" and "streamed answer" in (t.error or "") and len(t.chunks) == 2
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "traces.jsonl").write_text('{"my": "own export"}\n')
    with pytest.raises(InputError, match="not a ragdoctor traces log"):
        llamaindex.record(engine, tmp_path / "mine")
