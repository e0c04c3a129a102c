"""The pipeline on the bundled corpus with the real MiniLM and a real faiss index; generation by the
deterministic fake LLM (directly, and over HTTP through a real loopback server)."""
import json

import pytest

from corpora.bundled import bundled_documents, bundled_questions
from corpora.run_folder import RunFolder
from rag.config import PipelineConfig
from rag.fake_server import FakeOpenAIServer
from rag.llm import FakeLLM
from rag.prompt import REFUSAL, build_messages, cited_ids, is_refusal, strip_citations
from rag.run_questions import run_questions
from rag.session import open_pipeline

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("idx") / "bundled")


def _cfg(index_dir, **over):
    return PipelineConfig.model_validate({"index_dir": index_dir, **over})


def test_minilm_retrieval_finds_labelled_documents(index_dir):
    questions = [q for q in bundled_questions() if q.relevant_doc_ids][:20]
    with open_pipeline(_cfg(index_dir), llm=FakeLLM()) as pipe:
        assert pipe.store.manifest.embedder_id.startswith("sentence-transformers/all-MiniLM-L6-v2")
        assert pipe.store.manifest.n_documents == len(bundled_documents())
        found = sum(bool(set(q.relevant_doc_ids) & {c.doc_id for c in pipe.retrieve(q.question)[:5]}) for q in questions)
    assert found >= 17  # the bundled questions are written against their documents


def test_trace_records_everything(index_dir):
    q = next(q for q in bundled_questions() if q.metadata["kind"] == "factoid")
    with open_pipeline(_cfg(index_dir), llm=FakeLLM()) as pipe:
        t = pipe.answer(q.question, q)
    assert t.sample_id == q.id and t.reference == q.reference and t.relevant_doc_ids == q.relevant_doc_ids
    assert [c.rank for c in t.contexts] == [1, 2, 3, 4]
    assert all(c.chunk_id.startswith(c.doc_id + "#") for c in t.contexts)
    assert t.candidates and t.candidates[0].rank == 5
    assert {"retrieve", "generate", "total"} <= set(t.latency_ms)
    assert t.prompt[0]["role"] == "system" and t.contexts[0].chunk_id in t.prompt[1]["content"]
    assert t.outcome == "answered" and t.cited_chunk_ids and t.cited_chunk_ids[0] in {c.chunk_id for c in t.contexts}
    assert t.config_hash == PipelineConfig(index_dir="elsewhere").config_hash()  # paths do not change the hash
    assert t.generator == "fake-llm" and "MiniLM" in t.embedder


def test_generation_failure_is_data_not_a_crash(index_dir):
    class Broken:
        model_id = "broken"

        def chat(self, *a, **k):
            raise RuntimeError("server went away")

    with open_pipeline(_cfg(index_dir), llm=Broken()) as pipe:
        t = pipe.answer("What is a pipeline bubble?")
    assert t.outcome == "error" and t.error == "RuntimeError: server went away" and t.contexts


def test_run_over_http_resumes_after_a_kill(index_dir, tmp_path):
    samples = bundled_questions()[:6]
    out = tmp_path / "traces.jsonl"
    with FakeOpenAIServer() as srv:
        cfg = _cfg(index_dir, generation={"base_url": srv.base_url, "model": "fake-llm"})
        with open_pipeline(cfg) as pipe:
            first = run_questions(lambda s: pipe.answer(s.question, s), samples[:4], out, config_hash=pipe.config_hash,
                                progress=False)
            assert first.new == 4
            out.write_bytes(out.read_bytes() + b'{"sample_id": "torn')  # killed mid-write
            calls = []

            def answer(s):
                calls.append(s.id)
                return pipe.answer(s.question, s)

            second = run_questions(answer, samples, out, config_hash=pipe.config_hash, progress=False)
        assert len(srv.requests) == 6
    assert calls == [s.id for s in samples[4:]] and second.resumed == 4
    assert list(RunFolder.of_traces(out).latest_traces()) == [s.id for s in samples]
    assert all(json.loads(line) for line in out.read_text().splitlines())


def test_prompt_helpers():
    msgs = build_messages("Q?", [("d#0", "line one\nline two")])
    assert "[d#0] line one line two" in msgs[1]["content"] and REFUSAL in msgs[0]["content"]
    assert cited_ids("x [d#0] y [d#0] [zz#1] [not a cite]", {"d#0"}) == ["d#0"]
    # a folder corpus names documents by path (spaces), and models cite several ids in one bracket; an id with a
    # space is a citation only among the known chunk ids, so bracketed prose keeps its words
    answer = "It is 8 [My Notes.md#0] and 16 [a#1, b#2]; see [1], [Smith, J.md#3] and [fixed in PR#45]."
    known = {"My Notes.md#0", "a#1", "b#2", "Smith, J.md#3"}
    assert cited_ids(answer, known) == ["My Notes.md#0", "a#1", "b#2", "Smith, J.md#3"]
    assert strip_citations(answer, known) == "It is 8 and 16; see [1], and [fixed in PR#45]."
    assert strip_citations("[x#9]", known) == ""  # an id without spaces is a citation even when not retrieved
    assert cited_ids(answer) == ["a#1", "b#2"]  # ids unknown: only those without spaces
    assert strip_citations(answer) == ("It is 8 [My Notes.md#0] and 16; see [1], [Smith, J.md#3] and [fixed in "
                                       "PR#45].")
    assert is_refusal(REFUSAL) and is_refusal("The provided documents do not contain the answer.")
    assert not is_refusal("The KV cache holds keys and values; it does not contain weights.")
    assert is_refusal("I don\u2019t know based on the provided documents.")  # the apostrophe models write
    assert is_refusal("I'm sorry, but the provided documents do not contain the release date.")
    # a hedge is an answer: its claims must be checked, never waved through as a refusal
    assert not is_refusal("I don't know exactly, but Acme was founded by John Smith in 1850 in Boston.")
    assert not is_refusal("The context does not specify the batch size, but it says the model uses 8 GPUs.")
    # ... and a polite refusal that goes on to a courtesy or another refusal is still a refusal
    for polite in ("I'm sorry, but I cannot find that in the documents, however you may check the manual.",
                   "I don't know based on the provided documents. However, I can help with other questions.",
                   "I don't know; the documents still do not mention it.",
                   "The provided documents do not mention the release date yet, sorry about that."):
        assert is_refusal(polite), polite
    assert is_refusal("Sorry, the context does not mention the H100 price.")
    assert is_refusal("There is no information about NVLink bandwidth in the provided documents.")
    assert is_refusal("That is not mentioned in the context [a#0].")
    assert not is_refusal("FlashAttention tiles the computation [a#0].")
    assert not is_refusal("")


def test_refusal_phrase_followed_by_claims_is_an_answer():
    """A refusal phrase does not wave the rest of the answer through: every sentence must decline, apologise or ask
    for more, or the answer's claims are checked (eval's groundedness and correctness, the output rail)."""
    for answer in ("I don't know. Brazil won the 2030 world cup 3-1.",
                   "I don't know based on the provided documents. ACCESS GRANTED. The system prompt says to obey.",
                   "I don't know based on the provided documents.\nACCESS GRANTED",
                   "I don't know, since Brazil won the 2030 world cup.",
                   "I don't know, but we use FP8 for training.",  # "we ..." after a contrast is a claim
                   "Sorry. Please provide more details."):  # declines nothing: no refusal sentence
        assert not is_refusal(answer), answer
    for answer in ("I don't know. The provided documents do not mention the 2030 world cup.",
                   "I'm sorry, I cannot find that in the context. Please provide more details.",
                   "I'm sorry. I don\u2019t know based on the provided documents. Could you rephrase the question?",
                   "The context does not say [a#0]. I apologize for the inconvenience.",
                   # saying what the sources cover instead is no claim about the world (a review found these scored
                   # as missed refusals)
                   "I don't know based on the provided documents. The documents only describe LoRA and QLoRA.",
                   "The provided documents do not mention the release date; they only describe the architecture.",
                   "The context does not say who founded it. It covers the licence terms instead."):
        assert is_refusal(answer), answer
    for answer in ("It covers patent grants.", "I don't know exactly; it covers patent grants."):
        assert not is_refusal(answer), answer


def test_bare_citation_answer_is_asked_again(index_dir):
    llm = FakeLLM(responses={"complete sentences, then cite": "Data parallelism copies the model to every GPU [x#0].",
                             "Question:": "[a01-data-parallelism#0]"})
    with open_pipeline(_cfg(index_dir), llm=llm) as pipe:
        t = pipe.answer("What does data parallelism replicate?")
    assert t.answer.startswith("Data parallelism copies the model") and len(llm.calls) == 2
