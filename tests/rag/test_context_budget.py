"""The context budget: the packing function (pure), its config and flag, and the pipeline packing real retrieval over
the bundled corpus (fake embedder, so tokens are whitespace words; fake generator, directly and over HTTP)."""
import pytest

from corpora.bundled import bundled_questions
from corpora.errors import InputError
from rag.config import PipelineConfig, load_config
from rag.context_budget import leading_sentences, pack, sentences
from rag.fake_server import FakeOpenAIServer
from rag.llm import FakeLLM
from rag.prompt import context_line
from rag.session import open_pipeline
from ragdoctor.cli import build_parser
from ragdoctor.options import config_from_args
from ragdoctor.run_report import summarize_traces


def test_pack_keeps_rank_order_and_respects_the_budget():
    sizes = {"a": 40, "b": 30, "c": 50, "d": 20, "e": 10}
    p = pack(list(sizes), 100, sizes.__getitem__)
    assert p.packed == ["a", "b"] and p.left_out == ["c", "d", "e"]  # c does not fit: packing stops there
    assert p.tokens == 70 and p.cut is None  # no shortening given: c is left out whole
    for budget in range(0, 160, 7):
        q = pack(list(sizes), budget, sizes.__getitem__)
        assert q.tokens == sum(sizes[c] for c in q.packed) <= budget
        assert q.packed + q.left_out == list(sizes)  # a prefix of the ranking, the rest left out


def _words(text):
    return len(text.split())


def test_the_first_chunk_that_does_not_fit_is_cut_at_a_sentence_boundary():
    chunks = ["One two three. Four five.", "Six seven. Eight nine ten! Eleven.", "Twelve."]

    def shorten(c, room):
        head = leading_sentences(c, room, _words)
        return None if head is None else (head, _words(head))

    p = pack(chunks, 10, _words, shorten)  # 5 words fit whole; 5 left: "six seven. eight nine ten!"
    assert p.packed == ["One two three. Four five.", "Six seven. Eight nine ten!"]
    assert p.cut == "Six seven. Eight nine ten!" and p.tokens == 10 and p.left_out == ["Twelve."]
    p = pack(chunks, 4, _words, shorten)  # budget below the first chunk: its first sentence
    assert p.packed == ["One two three."] and p.cut == "One two three." and p.left_out == chunks[1:]
    p = pack(chunks, 2, _words, shorten)  # not even the first sentence fits: nothing
    assert p.packed == [] and p.cut is None and p.tokens == 0 and p.left_out == chunks
    assert sentences('He said "stop." Then (it ran.) On? Yes! X') == ['He said "stop."', "Then (it ran.)", "On?",
                                                                      "Yes!", "X"]
    assert sentences("3.14 is pi. It is, e.g. here, 3.14.\n\n2 more.") == ["3.14 is pi.", "It is, e.g. here, 3.14.",
                                                                          "2 more."]


def test_pack_edge_cases():
    nothing = pack(["big", "x"], 2, len)  # budget below the first chunk, no shortening: nothing, not "x"
    assert nothing.packed == [] and nothing.left_out == ["big", "x"] and nothing.tokens == 0
    empty = pack([], 512, len)
    assert empty.packed == [] and empty.left_out == [] and empty.tokens == 0
    assert pack(["exact"], 5, len).packed == ["exact"]  # a chunk exactly the budget fits
    with pytest.raises(ValueError):
        pack(["a"], -1, len)


def test_config_validation():
    assert PipelineConfig().retrieval.context_tokens is None  # default: today's top-k
    assert load_config(None, {"retrieval": {"context_tokens": 512}}).retrieval.context_tokens == 512
    with pytest.raises(InputError, match="retrieval.context_tokens"):
        load_config(None, {"retrieval": {"context_tokens": 8}})
    with pytest.raises(InputError, match=r"must be below generation.n_ctx"):
        load_config(None, {"retrieval": {"context_tokens": 4000}})
    both = load_config(None, {"retrieval": {"context_tokens": 512}, "guardrails": {"enabled": True}})
    assert both.retrieval.context_tokens == 512 and both.guardrails.enabled  # the retrieval rail packs the budget
    with pytest.raises(InputError, match="context_tokens"):
        load_config(None, environ={"RAGDOCTOR_RETRIEVAL__CONTEXT_TOKENS": "lots"})
    # no budget: the hash a run had before the key existed; a budget is part of what changes an answer
    base = PipelineConfig()
    assert base.config_hash() == PipelineConfig.model_validate({"retrieval": {"top_k": 4}}).config_hash()
    assert PipelineConfig.model_validate({"retrieval": {"context_tokens": 512}}).config_hash() != base.config_hash()


def test_cli_flag(capsys):
    args = build_parser().parse_args(["run", "--context-tokens", "256"])
    assert config_from_args(args).retrieval.context_tokens == 256
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["demo", "--context-tokens", "16"])
    assert exc.value.code == 2 and "--context-tokens" in capsys.readouterr().err


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("idx") / "bundled")


def _cfg(index_dir, **over):
    return PipelineConfig.model_validate({"index_dir": index_dir, "embedding": {"model": "fake"}, **over})


def test_pipeline_packs_the_ranking_into_the_budget(index_dir):
    questions = [q for q in bundled_questions() if q.relevant_doc_ids][:8]
    llm = FakeLLM()
    with open_pipeline(_cfg(index_dir, retrieval={"context_tokens": 200}), llm=llm) as pipe:
        traces = [pipe.answer(q.question, q) for q in questions]
        whole = {c.chunk_id: c.text for q in questions for c in pipe.retrieve(q.question)}
    for t in traces:
        info = t.metadata["context_budget"]
        used = sum(len(context_line(c.chunk_id, c.text).split()) for c in t.contexts)
        assert t.contexts and used == info["tokens"] <= 200 and info["packed"] == len(t.contexts)
        assert info["tokenizer"] == "whitespace words"
        ranks = [c.rank for c in t.contexts]
        assert ranks == list(range(1, len(ranks) + 1))  # a prefix of the ranking
        assert [c.rank for c in t.candidates] == list(range(len(ranks) + 1, len(ranks) + len(t.candidates) + 1))
        for c in t.contexts:  # whole chunks, but the last may be cut (flagged, its leading sentences)
            if c.chunk_id == info["cut"]:
                assert c is t.contexts[-1] and c.flags == ["cut"] and whole[c.chunk_id].startswith(c.text)
                assert len(c.text) < len(whole[c.chunk_id])
            else:
                assert c.text == whole[c.chunk_id] and not c.flags
        if info["cut"] is None and t.candidates:  # nothing was cut: the next chunk's first sentence did not fit
            nxt = whole[t.candidates[0].chunk_id]
            assert used + len(context_line("x", sentences(nxt)[0]).split()) > 200 or len(sentences(nxt)) == 1
        # what the model saw is exactly the packed chunks (the metrics read contexts: they are over what it saw)
        prompt = t.prompt[1]["content"]
        assert all(context_line(c.chunk_id, c.text) in prompt for c in t.contexts)
        assert not any(f"[{c.chunk_id}]" in prompt for c in t.candidates)
    assert len(llm.calls) == len(questions)
    assert sum(t.metadata["context_budget"]["cut"] is not None for t in traces) >= 4
    assert summarize_traces(traces)["retrieval"]["recall@5"] is not None


def test_no_budget_is_top_k_and_a_tiny_budget_over_http(index_dir):
    q = next(q for q in bundled_questions() if q.relevant_doc_ids)
    with open_pipeline(_cfg(index_dir), llm=FakeLLM()) as pipe:
        t = pipe.answer(q.question, q)
    assert [c.rank for c in t.contexts] == [1, 2, 3, 4] and "context_budget" not in t.metadata
    with FakeOpenAIServer() as srv:
        cfg = _cfg(index_dir, retrieval={"context_tokens": 32}, generation={"base_url": srv.base_url,
                                                                            "model": "fake-llm"})
        with open_pipeline(cfg) as pipe:
            small = pipe.answer(q.question, q)
        sent = srv.requests[-1]["messages"][1]["content"]
    info = small.metadata["context_budget"]
    assert info["tokens"] <= 32 and len(small.contexts) == info["packed"]
    assert all(f"[{c.chunk_id}]" in sent for c in small.contexts)
    assert small.outcome in ("answered", "refused")


def test_the_sentence_cut_does_not_end_a_sentence_at_an_abbreviation():
    count = lambda t: len(t.split())  # noqa: E731
    assert sentences("Dr. Smith inspected the inverter. It showed code ZX-9071 twice.") == [
        "Dr. Smith inspected the inverter.", "It showed code ZX-9071 twice."]
    assert leading_sentences("See Fig. 3 for the wiring. Then reset.", 3, count) is None  # never "See Fig."
    assert leading_sentences("See Fig. 3 for the wiring. Then reset.", 6, count) == "See Fig. 3 for the wiring."
    assert sentences("Built by J. R. Smith. It works.") == ["Built by J. R. Smith.", "It works."]
