"""The claim-level LLM judge (eval/judges/llm_claims.py) with several asks in flight against a fleet of fake
OpenAI-compatible servers: the same verdicts as one at a time, overlap measured at the servers, and a dead fleet
makes the results unmeasured with the reason (never a crash)."""
from __future__ import annotations

from corpora.records import Chunk, Trace
from eval.judges.llm_claims import LLMJudge
from rag.fake_server import FakeOpenAIServer, Rendezvous
from rag.fleet import RetryPolicy
from rag.llm import FakeLLM, OpenAIChatLLM

CTX = "LoRA trains low-rank adapters. FlashAttention is exact. Ring all-reduce moves chunks around a ring."
ANSWERS = ["LoRA trains low-rank adapters.", "FlashAttention is exact.", "Ring all-reduce moves chunks.",
           "LoRA trains low-rank adapters. FlashAttention is exact."]


def traces() -> list[Trace]:
    return [Trace(sample_id=f"s{i}", question="What do the notes say?", answer=a,
                  contexts=[Chunk(chunk_id=f"s{i}#0", text=CTX, rank=1)]) for i, a in enumerate(ANSWERS)]


def judge_with(servers, concurrency: int) -> tuple[LLMJudge, OpenAIChatLLM]:
    llm = OpenAIChatLLM([s.base_url for s in servers], model="judge", timeout=10,
                        retry=RetryPolicy(max_retries=1, base_delay=0.01, max_delay=0.02))
    return LLMJudge(llm, cache=False, concurrency=concurrency), llm


def test_concurrent_asks_give_the_same_verdicts_and_overlap_at_the_servers():
    servers = [FakeOpenAIServer(FakeLLM({"Answer YES or NO": "YES"})) for _ in range(2)]
    for s in servers:
        s.start()
        s.latency = 0.1
    try:
        serial, _ = judge_with(servers, 1)
        one = [r.value for r in serial.judge("groundedness", traces())]
        assert max(s.max_in_flight for s in servers) == 1
        for s in servers:
            s.max_in_flight = 0
        together = Rendezvous(3)  # across the fleet: the first asks are held until three are in flight at once
        for s in servers:
            s.rendezvous = together
        parallel, llm = judge_with(servers, 4)
        many = [r.value for r in parallel.judge("groundedness", traces())]
        assert many == one and all(v == 1.0 for v in many)
        assert together.met, "three asks were never in flight at once"
        assert sum(s.max_in_flight for s in servers) >= 3 and llm.stats.max_in_flight <= 4
        assert all(s.served > 0 for s in servers)  # round-robin over the fleet
    finally:
        for s in servers:
            s.stop()


def test_a_dead_judge_fleet_makes_every_result_unmeasured_with_the_reason():
    servers = [FakeOpenAIServer() for _ in range(2)]
    for s in servers:
        s.start()
        s.always = "503"
    try:
        judge, llm = judge_with(servers, 4)
        results = judge.judge("groundedness", traces())
    finally:
        for s in servers:
            s.stop()
    assert [r.status for r in results] == ["unmeasured"] * 4
    assert all("judge call failed" in (r.reason or "") and "after 1 retry" in (r.reason or "") for r in results)
    assert llm.stats.n_failures >= 1 and llm.stats.failures.keys() == {"http_503"}
