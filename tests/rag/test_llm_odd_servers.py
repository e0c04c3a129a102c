"""OpenAI-compatible servers with odd but real habits (rag/llm.py against rag/fake_server.py): empty ``choices``, a
``content: null`` (a tool call, a refusal), an event stream nobody asked for, a model or a path the server does not
know, an API key in the URL's query. Each is an answer kept or a one-line reason saying what to fix, never a dump of
the reply object and never a secret."""
from __future__ import annotations

import pytest

from rag.fake_server import FakeOpenAIServer
from rag.fleet import public_url, redact_urls, render_requests
from rag.llm import LLMError, OpenAIChatLLM

ASK = [{"role": "user", "content": "[a01#0] Data parallelism replicates the model on every device.\n\n"
                                   "Question: What does data parallelism replicate on every device?\nAnswer:"}]


def chat(server: FakeOpenAIServer, shape: str, **kw) -> tuple[OpenAIChatLLM, object]:
    server.faults = [shape]
    llm = OpenAIChatLLM(server.base_url, model=kw.pop("model", "m"), max_retries=kw.pop("max_retries", 2), **kw)
    try:
        return llm, llm.chat(ASK)
    except LLMError as exc:
        return llm, exc


def test_a_reply_of_an_odd_shape_is_an_answer_or_a_one_line_reason():
    with FakeOpenAIServer() as server:
        _, plain = chat(server, "ok")
        assert not isinstance(plain, LLMError)

        llm, empty = chat(server, "empty")
        assert isinstance(empty, LLMError) and empty.kind == "malformed"
        assert "no choices" in str(empty) and "ChatCompletion(" not in str(empty)
        assert llm.stats.requests == 1  # a malformed reply is not retried

        _, tool = chat(server, "null")
        assert isinstance(tool, LLMError) and tool.kind == "malformed"
        assert "tool call" in str(tool) and "search" in str(tool) and "tool_calls" in str(tool)

        _, refused = chat(server, "refusal")  # the model's reply is its refusal: kept as its answer
        assert not isinstance(refused, LLMError)
        assert refused.text == "I'm sorry, I cannot help with that."

        llm, streamed = chat(server, "sse")  # an event stream though none was asked for: its text put together
        assert not isinstance(streamed, LLMError), streamed
        assert streamed.text == plain.text and streamed.finish_reason == "stop" and streamed.model == "m"
        assert llm.stats.ok == 1

        _, bare = chat(server, "nousage")
        assert not isinstance(bare, LLMError) and bare.text == plain.text and bare.prompt_tokens is None
    for err in (empty, tool):
        assert "\n" not in str(err) and len(str(err)) < 400


def test_an_event_stream_that_says_nothing_usable_is_malformed_with_its_start():
    from types import SimpleNamespace

    llm = OpenAIChatLLM("http://127.0.0.1:9/v1", model="m", max_retries=0)
    with pytest.raises(LLMError, match=r"neither a chat completion nor an event stream of one: '<html>"):
        llm._parse("<html>not json</html>", 0.1)
    with pytest.raises(LLMError, match=r"stream.*error.*overloaded"):
        llm._parse('data: {"error": {"message": "overloaded"}}\n\ndata: [DONE]\n\n', 0.1)
    assert llm._parse(SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=""))]), 0.1).text == ""


def test_a_model_or_a_path_the_server_does_not_know_says_what_to_check():
    with FakeOpenAIServer() as server:
        server.models_served = {"good"}
        llm, err = chat(server, "ok", model="bad")
        assert isinstance(err, LLMError) and err.kind == "http_404" and llm.stats.requests == 1  # not retried
        assert "check the model name" in str(err) and "'bad'" in str(err)
        server.root_routes = False  # like vLLM: the API only under /v1
        root = OpenAIChatLLM(server.base_url.removesuffix("/v1"), model="good", max_retries=0)
        with pytest.raises(LLMError, match=r"404.*a base URL usually ends in /v1"):
            root.chat(ASK)
        assert OpenAIChatLLM(server.base_url + "/", model="good", max_retries=0).chat(ASK).text  # a trailing slash


def test_an_api_key_in_the_urls_query_is_sent_and_never_shown_or_recorded():
    from rag.config import GenerationConfig

    with FakeOpenAIServer() as server:
        url = server.base_url + "?api_key=sk-SECRET&api-version=2024"
        llm = OpenAIChatLLM(url, model="m", max_retries=0)
        assert llm.chat(ASK).text
        assert server.paths[-1] == "/v1/chat/completions?api_key=sk-SECRET&api-version=2024"
        assert "SECRET" not in llm.model_id + llm.base_url
        server.faults = ["500"]
        with pytest.raises(LLMError) as err:
            llm.chat(ASK)
        assert "SECRET" not in str(err.value)
        assert "SECRET" not in render_requests(llm.stats.as_dict())
        assert public_url(url) == server.base_url and "SECRET" not in redact_urls(f"failed at '{url}/chat/completions'")
    hashed = GenerationConfig(base_url=url, model="m").hash_fields()
    assert hashed["base_url"] == public_url(url)


def test_a_fleet_node_that_answered_nothing_is_named_in_the_request_line():
    one_down = {"requests": 7, "ok": 6, "retries": 1, "retries_by_kind": {"connection": 1}, "failed": 0,
                "failed_by_kind": {}, "waited_s": 0.0, "max_in_flight": 1,
                "endpoints": {"http://a/v1": {"requests": 1, "ok": 0, "retried": 1, "failed": 0},
                              "http://b/v1": {"requests": 6, "ok": 6, "retried": 0, "failed": 0}}}
    line = render_requests(one_down)
    assert line.endswith("; per endpoint: http://a/v1 1, http://b/v1 6; no reply from http://a/v1 (the run went on "
                         "with the others)")
    all_down = {**one_down, "ok": 0, "endpoints": {u: {**c, "ok": 0} for u, c in one_down["endpoints"].items()}}
    assert "no reply from" not in render_requests(all_down)  # every one down: the failures say it
    single = {**one_down, "endpoints": {"http://a/v1": {"requests": 7, "ok": 0, "retried": 1, "failed": 0}}}
    assert "no reply from" not in render_requests(single)
