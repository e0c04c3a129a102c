"""Retries, backoff, Retry-After and fleets (rag/fleet.py, rag/llm.py's OpenAIChatLLM), and concurrent generation
into a run folder (rag/run_questions.py) against fake OpenAI-compatible servers on loopback that inject latency,
429s, 5xx and dropped connections on a deterministic schedule."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime, parsedate_to_datetime
from pathlib import Path

import pytest

from corpora.run_folder import RUN_SUMMARY, RunFolder
from rag.config import PipelineConfig, load_config
from rag.fake_server import FakeOpenAIServer, Rendezvous
from rag.fleet import (
    Endpoints,
    Jitter,
    RequestError,
    RequestStats,
    RetryPolicy,
    backoff_delay,
    call_with_retries,
    parse_retry_after,
    retry_delay,
)
from rag.llm import FakeLLM, LLMError, OpenAIChatLLM
from tests.files import complete_records

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([os.environ.get("PYTHONPATH", ""), str(ROOT)])}
CLI = [sys.executable, "-m", "ragdoctor.cli"]
ASK = [{"role": "user", "content": "[c1] LoRA trains low-rank adapters.\n\nQuestion: What low-rank adapters does LoRA use?"}]
TOPICS = ["kv cache", "flash attention", "lora rank", "ring allreduce", "speculative decoding", "paged attention"]


# --- the math, pure ------------------------------------------------------------------------------------------------

def test_backoff_doubles_within_its_jitter_band_and_is_capped():
    assert backoff_delay(0, 0.5, 8.0, 0.0) == 0.25 and backoff_delay(0, 0.5, 8.0, 1.0) == 0.5
    assert [backoff_delay(a, 0.5, 8.0, 0.5) for a in range(6)] == [0.375, 0.75, 1.5, 3.0, 6.0, 6.0]
    assert backoff_delay(200, 0.5, 8.0, 0.999) <= 8.0  # no overflow far out
    assert backoff_delay(3, 1.0, 100.0, -5) == 4.0 and backoff_delay(3, 1.0, 100.0, 7) == 8.0  # u clipped to [0, 1]


def test_retry_after_reads_seconds_and_http_dates():
    now = datetime(2026, 12, 2, 15, 0, 0, tzinfo=UTC)
    assert parse_retry_after("3", now) == 3.0 and parse_retry_after(" 0.25 ", now) == 0.25
    assert parse_retry_after("-4", now) == 0.0
    assert parse_retry_after(format_datetime(now + timedelta(seconds=7), usegmt=True), now) == 7.0
    assert parse_retry_after("Wed, 02 Dec 2026 14:59:00 GMT", now) == 0.0  # already passed
    assert parse_retry_after("Wed, 02 Dec 2026 15:00:30", now) == 30.0  # no zone: GMT, as HTTP dates are
    for bad in (None, "", "soon", "nan", "inf"):
        assert parse_retry_after(bad, now) is None


def test_retry_delay_honours_retry_after_and_refuses_an_over_long_one():
    policy = RetryPolicy(base_delay=1.0, max_delay=4.0, max_retry_after=60.0)
    assert retry_delay(2, None, policy, 0.5) == 3.0  # backoff: half of 4 plus half of the other half
    assert retry_delay(0, 12.0, policy, 0.9) == 12.0  # the server said when: that long, jitter or not
    assert retry_delay(5, 0.0, policy, 0.9) == 0.0
    assert retry_delay(0, 61.0, policy, 0.5) is None


def test_jitter_is_seeded():
    a, b, c = Jitter(7), Jitter(7), Jitter(8)
    draws = [a() for _ in range(5)]
    assert draws == [b() for _ in range(5)] and draws != [c() for _ in range(5)]
    assert all(0.0 <= d < 1.0 for d in draws)


def test_the_retry_loop_counts_retries_and_the_final_failure():
    calls: list[int] = []
    slept: list[float] = []

    def attempt(k: int):  # endpoint k of two; the first two tries fail
        def call():
            calls.append(k)
            if len(calls) <= 2:
                raise RequestError("boom", kind="http_503", retryable=True)
            return "ok"
        return f"u{k}", call

    stats = RequestStats()
    policy = RetryPolicy(max_retries=3, base_delay=1.0, max_delay=10.0)
    assert call_with_retries(attempt, policy, stats, jitter=lambda: 0.0, sleep=slept.append,
                             endpoints=Endpoints(2)) == "ok"
    assert calls == [0, 1, 0] and slept == [0.5, 1.0]  # a retry goes to the next endpoint, after its backoff
    d = stats.as_dict()
    assert (d["requests"], d["ok"], d["retries"], d["failed"], d["retries_by_kind"]) == (3, 1, 2, 0, {"http_503": 2})
    assert d["endpoints"]["u0"] == {"requests": 2, "ok": 1, "retried": 1, "failed": 0}

    def never(i: int):
        def call():
            raise RequestError("down", kind="connection", retryable=True)
        return "u", call

    with pytest.raises(RequestError, match=r"down \(after 3 retries\)"):
        call_with_retries(never, policy, stats, jitter=lambda: 0.0, sleep=slept.append)
    assert stats.n_failures == 1 and stats.failures == {"connection": 1} and stats.n_retries == 5

    def bad_request(i: int):
        def call():
            raise RequestError("HTTP 400", kind="http_400", retryable=False)
        return "u", call

    with pytest.raises(RequestError, match="^HTTP 400$"):  # not retried
        call_with_retries(bad_request, policy, stats, jitter=lambda: 0.0, sleep=slept.append)
    assert stats.n_retries == 5 and stats.failures == {"connection": 1, "http_400": 1}


# --- one client against fake servers -------------------------------------------------------------------------------

def client(urls, max_retries: int = 3, **kw) -> tuple[OpenAIChatLLM, list[float]]:
    slept: list[float] = []
    llm = OpenAIChatLLM(urls, model="fake", timeout=10,
                        retry=RetryPolicy(max_retries=max_retries, base_delay=0.01, max_delay=0.02, **kw),
                        sleep=slept.append)
    return llm, slept


def test_a_429_waits_what_retry_after_says_in_seconds_or_as_a_date():
    with FakeOpenAIServer() as srv:
        llm, slept = client(srv.base_url)
        when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)  # whole seconds, GMT
        srv.faults = ["429:2", f"429:{when}", "429"]
        before = datetime.now(UTC)
        assert "LoRA" in llm.chat(ASK).text
        after = datetime.now(UTC)
    # the date is read against the clock at the second reply, somewhere between `before` and `after` (a loaded
    # machine may take seconds over the call): exactly that many seconds short of the date, never a backoff
    due = parsedate_to_datetime(when)
    assert (due - after).total_seconds() - 1e-3 <= slept[1] <= (due - before).total_seconds() + 1e-3 <= 30.001
    assert slept[0] == 2.0 and slept[2] <= 0.02  # the last: no header, backoff
    assert llm.stats.as_dict()["retries_by_kind"] == {"http_429": 3} and srv.received == 4


def test_5xx_and_dropped_connections_are_retried_and_a_400_is_not():
    with FakeOpenAIServer() as srv:
        srv.faults = ["500", "drop", "503"]
        llm, slept = client(srv.base_url)
        assert llm.chat(ASK).text and len(slept) == 3
        assert llm.stats.as_dict()["retries_by_kind"] == {"connection": 1, "http_500": 1, "http_503": 1}
        srv.faults = ["400"]
        with pytest.raises(LLMError, match="injected 400"):
            llm.chat(ASK)
        assert len(slept) == 3 and llm.stats.failures == {"http_400": 1}


def test_a_dead_endpoint_fails_with_a_one_line_reason_after_its_retries():
    with FakeOpenAIServer() as srv:
        srv.always = "500"
        llm, _ = client(srv.base_url, max_retries=2)
        with pytest.raises(LLMError) as err:
            llm.chat(ASK)
        assert srv.received == 3
    assert "InternalServerError" in str(err.value) and "after 2 retries" in str(err.value)
    assert "\n" not in str(err.value) and llm.stats.as_dict()["failed_by_kind"] == {"http_500": 1}


def test_a_retry_after_over_the_limit_fails_now_saying_so():
    with FakeOpenAIServer() as srv:
        srv.faults = ["429:3600"]
        llm, slept = client(srv.base_url, max_retry_after=60.0)
        with pytest.raises(LLMError, match="retry after 3600 s, over the 60 s limit"):
            llm.chat(ASK)
    assert slept == []


def test_a_fleet_is_used_round_robin_and_a_retry_fails_over_to_the_next():
    servers = [FakeOpenAIServer() for _ in range(3)]
    for s in servers:
        s.start()
    try:
        servers[1].always = "drop"
        llm, _ = client([s.base_url for s in servers], max_retries=0, cooldown=0.0)  # never stepped around
        replies = [llm.chat(ASK).text for _ in range(9)]
        assert all("LoRA" in r for r in replies)  # every request answered: the dead one's went on to the next, free
        assert [s.received for s in servers] == [3, 3, 6]  # 3 each round-robin; the 3 dropped ones failed over
        assert [s.served for s in servers] == [3, 0, 6]
        d = llm.stats.as_dict()
        assert (d["requests"], d["ok"], d["retries"], d["failed"]) == (12, 9, 3, 0)
        assert d["endpoints"][servers[1].base_url] == {"requests": 3, "ok": 0, "retried": 3, "failed": 0}
        assert llm.model_id == "fake@<fleet>"  # the endpoints are in the counts, not the name
    finally:
        for s in servers:
            s.stop()


@contextlib.contextmanager
def dead_urls(n: int):
    """``n`` loopback URLs that refuse connections while the block runs (bound, so no one else takes the port, but
    never listening)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        yield [f"http://127.0.0.1:{s.getsockname()[1]}/v1" for s in socks]


def test_endpoints_step_around_a_refusing_one_for_its_cooldown_and_a_retry_after_for_its_own_server():
    now = [100.0]
    ring = Endpoints(3, cooldown=5.0, clock=lambda: now[0])
    assert [ring.first() for _ in range(3)] == [0, 1, 2]  # round-robin
    ring.refused(0)
    assert ring.failover(0, {0}) == 1 and ring.failover(1, {0, 1}) == 2 and ring.failover(2, {0, 1, 2}) is None
    assert [ring.first() for _ in range(3)] == [1, 1, 2]  # 0's turn goes on to the next
    ring.refused(1), ring.refused(2)
    assert ring.first() == 0  # every one refused a moment ago: the next in turn is asked all the same
    now[0] += 5.01
    assert [ring.first() for _ in range(3)] == [1, 2, 0]  # the cooldown is over
    ring.wait_asked(2, 60.0)
    assert ring.retry(1) == 0 and ring.wait_for(0) is None and ring.failover(1, {1}) == 0  # 2 is left alone, not 0
    assert ring.wait_for(2) == pytest.approx(60.0)
    one = Endpoints(1, cooldown=5.0, clock=lambda: now[0])
    one.refused(0)
    assert one.first() == 0 and one.retry(0) == 0 and one.failover(0, {0}) is None  # a lone server is still asked


def test_a_fleet_fails_over_past_endpoints_that_refuse_connections_without_spending_a_retry():
    """Three URLs of which only the third listens: every request is answered, even with no retry allowed (a
    connection error tries the other endpoints first), and a dead one is stepped around for its cooldown."""
    with dead_urls(2) as dead, FakeOpenAIServer() as live:
        for max_retries in (0, 1):
            llm, slept = client([*dead, live.base_url], max_retries=max_retries)
            assert all("LoRA" in llm.chat(ASK).text for _ in range(4))
            d = llm.stats.as_dict()
            assert slept == [] and (d["ok"], d["failed"], d["retries_by_kind"]) == (4, 0, {"connection": 2})
            assert [d["endpoints"][u]["requests"] for u in dead] == [1, 1]  # each tried once, then stepped around
            assert d["endpoints"][live.base_url] == {"requests": 4, "ok": 4, "retried": 0, "failed": 0}
            assert d["requests"] == d["ok"] + d["retries"] + d["failed"] == 6
        assert live.received == 8
        llm, slept = client(dead, max_retries=1)  # every one down: each tried, then one retry after a backoff (the
        with pytest.raises(LLMError, match=r"Connect.*\(after 1 retry\)"):  # other one refused a moment ago: not
            llm.chat(ASK)  # asked again in that attempt)
        assert len(slept) == 1 and llm.stats.as_dict()["requests"] == 3


def test_a_retry_after_holds_back_its_own_server_and_not_the_retry_that_goes_elsewhere():
    with FakeOpenAIServer() as busy, FakeOpenAIServer() as free:
        busy.faults = ["429:60"]
        llm, slept = client([busy.base_url, free.base_url], max_retries=1)
        assert all("LoRA" in llm.chat(ASK).text for _ in range(3))
        assert slept and slept[0] <= 0.02  # the retry went to the other server: a backoff, not busy's 60 s
        assert (busy.received, free.served) == (1, 3)  # busy is not sent anything before its 60 s are over
    with FakeOpenAIServer() as busy, FakeOpenAIServer() as free:
        busy.faults = ["429:3600"]  # over max_retry_after: a fleet steps around it instead of failing
        llm, slept = client([busy.base_url, free.base_url], max_retries=1, max_retry_after=60.0)
        assert "LoRA" in llm.chat(ASK).text and slept[0] <= 0.02


def test_one_url_keeps_its_config_hash_and_a_list_is_a_fleet():
    one = load_config(None, {"generation": {"base_url": "http://a/v1"}}, environ={})
    fleet = load_config(None, {"generation": {"base_url": ["http://a/v1", "http://b/v1"], "concurrency": 8}},
                        environ={})
    assert fleet.generation.urls() == ["http://a/v1", "http://b/v1"] and one.generation.urls() == ["http://a/v1"]
    runtime = load_config(None, {"generation": {"base_url": "http://a/v1", "concurrency": 8, "max_retries": 5,
                                                "timeout": 9}}, environ={})
    assert runtime.config_hash() == one.config_hash() != fleet.config_hash()  # how requests are sent changes no answer
    # the hashes runs already have: the bundled model, one server (its URL as written, a trailing / included)
    assert PipelineConfig().config_hash() == "d9772bec5bc7" and one.config_hash() == "97265af4723c"
    assert PipelineConfig(generation={"base_url": "http://a/v1/", "model": "m"}).config_hash() == "b3ffdcd9f407"
    # a password is no part of it (it never names a run folder, and a new one re-answers nothing)
    assert PipelineConfig(generation={"base_url": "http://u:s3cret@a/v1"}).config_hash() == "97265af4723c"
    # a fleet is its model: which nodes, and in which order, change no answer (every node answers any question)
    same = [["http://b/v1", "http://a/v1"], ["http://a/v1", "http://b/v1", "http://c/v1"], ["http://c/v1"] * 2]
    assert {PipelineConfig(generation={"base_url": u}).config_hash() for u in same} == {fleet.config_hash()}
    assert PipelineConfig(generation={"base_url": ["http://a/v1"] * 2, "model": "other"}).config_hash() != \
        fleet.config_hash()


def test_a_fleet_run_with_dead_nodes_and_passwords_answers_everything_and_records_no_password(tmp_path, capsys,
                                                                                               monkeypatch):
    """Three --base-url of which only the third listens: every question answered with the default one retry; the
    user:password in the URLs is in no run-folder file and no printed line (of run or eval); dropping a dead node or
    reordering the fleet resumes the run, and reordering the judges' fleet resumes the evaluation from its cache."""
    from ragdoctor.cli import main

    monkeypatch.setenv("RAGDOCTOR_CACHE", str(tmp_path / "cache"))
    corpus, questions = write_corpus(tmp_path, 4)
    # the live node answers the pipeline's questions from their context, and the llm judge's asks with a verdict (a
    # refusal is no verdict: eval/judges/verdicts.py)
    judge_says = {"Answer YES or NO.": "YES", "Reply YES or NO.": "YES"}
    with dead_urls(2) as dead, FakeOpenAIServer(FakeLLM(judge_says)) as live:
        secret = [u.replace("//", "//user:s3cret@") for u in [*dead, live.base_url]]
        run = tmp_path / "run"
        base = ["run", "--embedder", "fake", "--corpus", str(corpus), "--index-dir", str(tmp_path / "idx"),
                "--questions", str(questions), "--out", str(run / "traces.jsonl"), "--model", "fake"]
        assert main([*base, *(a for u in secret for a in ("--base-url", u))]) == 0
        printed = capsys.readouterr()
        assert "(4 new, 0 resumed)" in printed.out and "4 ok" in printed.out and "per endpoint:" in printed.out
        traces = [json.loads(line) for line in (run / "traces.jsonl").read_text().splitlines()]
        assert len(traces) == 4 and all(t["outcome"] != "error" for t in traces)  # 2 of 4 were errors
        assert traces[0]["generator"] == "fake@<fleet>"
        assert main([*base, "--base-url", secret[2], "--base-url", secret[1]]) == 0  # a dead node dropped, reordered
        printed2 = capsys.readouterr()
        assert "(0 new, 4 resumed)" in printed2.out
        judged = live.received
        for order in ([secret[2], secret[0]], [secret[0], secret[2]]):  # the judges' fleet, swapped
            args = ["eval", str(run / "traces.jsonl"), "--judges", "llm", "--out", str(tmp_path / "ev")]
            assert main([*args, *(a for u in order for a in ("--judge-base-url", u))]) == 0
        printed3 = capsys.readouterr()
        assert "(0 judged, 4 resumed" in printed3.out
        assert live.received > judged  # judged once, then resumed (and answered from the judge cache)
    for out in (printed, printed2, printed3):
        assert "s3cret" not in out.out + out.err and "user@" not in out.out + out.err
    written = [p for p in tmp_path.rglob("*") if p.is_file()]  # the run and eval folders, the judge cache
    assert any(p.name == "requests.json" for p in written) and any(p.name == "config.json" for p in written)
    assert [p for p in written if b"s3cret" in p.read_bytes()] == []


# --- concurrent generation into a run folder -----------------------------------------------------------------------

def write_corpus(tmp: Path, n_questions: int) -> tuple[Path, Path]:
    corpus = tmp / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"d{i}", "text": f"Note {i} explains {TOPICS[i % 6]} in detail, "
                                          f"with marker{i}."}) + "\n" for i in range(12)))
    questions = tmp / "q.jsonl"
    questions.write_text("".join(json.dumps({"id": f"q{i:02d}", "question": f"What does note {i % 12} say about "
                                             f"{TOPICS[i % 6]}?"}) + "\n" for i in range(n_questions)))
    return corpus, questions


def cfg_for(tmp: Path, urls: list[str], concurrency: int, max_retries: int = 3) -> PipelineConfig:
    corpus, questions = write_corpus(tmp, 24)
    return load_config(None, {"corpus": str(corpus), "questions": str(questions), "index_dir": str(tmp / "idx"),
                              "embedding": {"model": "fake"},
                              "generation": {"base_url": urls if len(urls) > 1 else urls[0], "model": "fake",
                                             "concurrency": concurrency, "max_retries": max_retries}}, environ={})


def log_ids(path: Path) -> list[str]:
    """The sample ids of the log's complete lines (a line being written, or torn by a kill, is left out)."""
    return [r["sample_id"] for r in complete_records(path)]


@pytest.fixture
def fleet():
    servers = [FakeOpenAIServer() for _ in range(3)]
    for s in servers:
        s.start()
    yield servers
    for s in servers:
        s.stop()


def test_a_fleet_of_three_at_concurrency_four_answers_every_question_once_through_faults(tmp_path, fleet,
                                                                                           monkeypatch):
    import functools

    import rag.llm
    from ragdoctor import flow

    # every injected fault is met (a dropped connection would otherwise step around its endpoint for a while, and the
    # faults scheduled after it come late or never): stepping around is tested on its own below
    monkeypatch.setattr(rag.llm, "RetryPolicy", functools.partial(RetryPolicy, cooldown=0.0))

    for s, faults in zip(fleet, (["429:0", "500"], ["drop", "503", "429:0"], [])):
        s.latency, s.faults = 0.05, list(faults)
    cfg = cfg_for(tmp_path, [s.base_url for s in fleet], concurrency=4)
    out = tmp_path / "run" / "traces.jsonl"
    result = flow.answer_questions(cfg, out, progress=False)
    ids = log_ids(out)
    assert sorted(ids) == [f"q{i:02d}" for i in range(24)] and len(set(ids)) == 24  # each exactly once
    assert all(t.outcome != "error" for t in result.traces)
    req = result.requests
    assert req is not None and req["retries"] == 5 and req["failed"] == 0  # one retry per injected fault
    assert req["retries_by_kind"] == {"connection": 1, "http_429": 2, "http_500": 1, "http_503": 1}
    assert req["requests"] == sum(s.received for s in fleet) == req["ok"] + 5
    assert all(s.served >= 6 for s in fleet)  # round-robin: every endpoint carried its share
    assert max(s.served for s in fleet) - min(s.served for s in fleet) <= 6
    flow.write_run_summary(RunFolder.of_traces(out), result.traces, result.requests)
    summary = json.loads((out.parent / RUN_SUMMARY).read_text())
    assert summary["requests"]["retries"] == 5 and set(summary["requests"]["endpoints"]) == {s.base_url for s in fleet}


def test_concurrency_overlaps_requests_and_stays_bounded(tmp_path):
    from ragdoctor import flow

    with FakeOpenAIServer() as srv:
        # the first requests are held until four are in flight at once (an event, not a latency that a loaded machine
        # may outlast); the latency after that keeps them overlapping, so a fifth would be seen
        srv.rendezvous, srv.latency = Rendezvous(4), 0.25
        cfg = cfg_for(tmp_path, [srv.base_url], concurrency=4)
        result = flow.answer_questions(cfg, tmp_path / "run" / "traces.jsonl", progress=False)
        assert srv.rendezvous.met, "four requests were never in flight at once"
        assert result.new == 24 and srv.max_in_flight == 4  # measured at the server, not by wall time
        assert result.requests is not None and result.requests["max_in_flight"] == 4
        srv.rendezvous, srv.max_in_flight = None, 0
        (tmp_path / "serial").mkdir()
        serial = cfg_for(tmp_path / "serial", [srv.base_url], concurrency=1)
        flow.answer_questions(serial, tmp_path / "serial" / "traces.jsonl", questions=None, limit=3, progress=False)
        assert srv.max_in_flight == 1


def test_a_request_that_finally_fails_is_an_error_trace_with_its_reason(tmp_path, fleet, capsys):
    from ragdoctor import flow
    from ragdoctor.cli import main

    fleet[0].faults = ["500", "500"]  # the first question's request and its one retry: it fails
    cfg = cfg_for(tmp_path, [fleet[0].base_url], concurrency=1, max_retries=1)
    out = tmp_path / "run" / "traces.jsonl"
    result = flow.answer_questions(cfg, out, progress=False)
    failed = [t for t in result.traces if t.outcome == "error"]
    assert [t.sample_id for t in failed] == ["q00"] and "after 1 retry" in (failed[0].error or "")
    assert "InternalServerError" in (failed[0].error or "")
    assert result.requests is not None and (result.requests["failed"], result.requests["retries"]) == (1, 1)

    # a fleet that is down: the run ends with every trace an error and exit 2, no traceback, nothing dropped
    for s in fleet:
        s.always = "503"
    corpus, questions = write_corpus(tmp_path, 24)
    args = ["run", "--embedder", "fake", "--corpus", str(corpus), "--index-dir", str(tmp_path / "idx"), "--questions",
            str(questions), "--out", str(tmp_path / "down" / "traces.jsonl"), "--concurrency", "4", "--max-retries",
            "2", "--limit", "6", "--model", "fake"] + [a for s in fleet for a in ("--base-url", s.base_url)]
    assert main(args) == 2
    captured = capsys.readouterr()
    assert "ragdoctor: error: every question failed" in captured.err and "Traceback" not in captured.err
    assert "requests: 18 sent, 0 ok, 12 retried (http_503 12), 6 failed (http_503 6)" in captured.out
    assert sorted(log_ids(tmp_path / "down" / "traces.jsonl")) == [f"q{i:02d}" for i in range(6)]
    down = json.loads((tmp_path / "down" / RUN_SUMMARY).read_text())
    assert down["requests"]["failed"] == 6 and down["outcomes"]["error"] == 6


def test_usage_errors_for_fleet_flags(capsys):
    from ragdoctor.cli import main

    with pytest.raises(SystemExit) as bad:
        main(["run", "--concurrency", "0"])
    assert bad.value.code == 2 and "--concurrency" in capsys.readouterr().err
    assert main(["run", "--base-url", " ", "--limit", "1"]) == 2
    assert "--base-url: a blank URL" in capsys.readouterr().err


@pytest.mark.slow
def test_a_killed_concurrent_fleet_run_resumes_with_nothing_lost_or_duplicated(tmp_path, fleet):
    for s in fleet:
        s.latency = 0.05
    fleet[1].faults = ["429:0", "drop", "500"] * 3
    corpus, questions = write_corpus(tmp_path, 40)
    out = tmp_path / "run" / "traces.jsonl"
    cmd = [*CLI, "run", "--embedder", "fake", "--index-dir", "idx", "--corpus", str(corpus), "--questions",
           str(questions), "--out", str(out), "--concurrency", "4", "--max-retries", "4", "--model", "fake"]
    cmd += [a for s in fleet for a in ("--base-url", s.base_url)]
    assert subprocess.run([*CLI, "index", *cmd[4:10]], cwd=tmp_path, env=ENV, capture_output=True).returncode == 0
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        if out.exists() and out.read_bytes().count(b"\n") >= 10:  # complete lines, not one being written
            break
        time.sleep(0.005)
    assert proc.poll() is None, "the run finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = log_ids(out)  # a line torn by the kill is redone, not resumed
    assert 10 <= len(before) < 40 and len(set(before)) == len(before)
    final = subprocess.run(cmd, cwd=tmp_path, env=ENV, capture_output=True, text=True)
    assert final.returncode == 0, final.stderr
    assert f"({40 - len(before)} new, {len(before)} resumed)" in final.stdout, final.stdout
    ids = log_ids(out)
    assert sorted(ids) == [f"q{i:02d}" for i in range(40)]  # nothing lost, nothing duplicated
    assert all(json.loads(ln)["outcome"] != "error" for ln in out.read_text().splitlines())
    assert "requests:" in final.stdout and "retried" in final.stdout
