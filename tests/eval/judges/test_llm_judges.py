"""The LLM judges (our claim verifier and ragas) on a scripted FakeLLM: values in [0, 1], refusal rules,
unparseable output -> unmeasured while the rest of the batch is measured, the disk cache; and once, slowly,
both judges on the real bundled Qwen 0.5B."""
from __future__ import annotations

import json
import math
import re
import threading
import time

import pytest

from corpora.records import Chunk, MetricResult, Trace
from eval.judge_cache import CachedLLM, cache_key
from eval.judges.llm_claims import UNPARSEABLE, LLMJudge, LLMScorer, parse_relevance, parse_support
from eval.metrics import model_metrics
from rag.embeddings import FakeEmbedder
from rag.llm import REFUSAL, FakeLLM, LLMError, LLMResponse

LLM_METRICS = [m.name for m in model_metrics(default_only=True)]
MARK = "Zorblat"  # a sample whose every judge reply is garbage
CTX = "The Eiffel Tower is in Paris. It was completed in 1889."


def sample(sid: str, question: str, answer: str, reference: str | None = None, **kw) -> Trace:
    return Trace(sample_id=sid, question=question, answer=answer, reference=reference,
                      contexts=[Chunk(chunk_id=f"{sid}#0", text=kw.pop("ctx", CTX), rank=1)], **kw)


GOOD = sample("good", "Where is the Eiffel Tower?", "The Eiffel Tower is in Paris.", "The Eiffel Tower is in Paris.")
WRONG = sample("wrong", "When was the Eiffel Tower completed?", "The Eiffel Tower was completed in 1925.",
               "The Eiffel Tower was completed in 1889.")
REFUSED = sample("refused", "Who painted the Eiffel Tower blue?", REFUSAL, metadata={"kind": "unanswerable"})
GARBLED = sample("garbled", f"What is {MARK}?", f"{MARK} is a small moon of Neptune.", f"{MARK} is a moon.",
                 ctx=f"{MARK} is a small moon of Neptune.")
BATCH = [GOOD, WRONG, REFUSED, GARBLED]


def check_result(r: MetricResult) -> None:
    assert r.status in ("ok", "unmeasured", "not_applicable")
    if r.status == "ok":
        assert r.value is not None and 0.0 <= r.value <= 1.0 and not math.isnan(r.value)
    else:
        assert r.value is None and r.reason


# our own claim verifier ---------------------------------------------------------------------------------------------
def claims_llm() -> FakeLLM:
    return FakeLLM({MARK: "banana", "Reply with exactly one word": "banana",
                    "<statement>The Eiffel Tower is in Paris.": "SUPPORTED",
                    "<statement>The Eiffel Tower was completed in 1925.": "CONTRADICTED",
                    "<statement>The Eiffel Tower was completed in 1889.": "Supported.",
                    "Premise:": "NOT_SUPPORTED", "Passage:": "Yes, it does."})


@pytest.mark.parametrize(("text", "supported", "contradicted"), [
    ("SUPPORTED", 1.0, 0.0), ("not supported", 0.0, 0.0), ("NOT_SUPPORTED.", 0.0, 0.0), ("Contradicted", 0.0, 1.0),
    ("The answer is: yes", 1.0, 0.0), ("No.", 0.0, 0.0), ("unsupported", 0.0, 0.0), ("Verdict: false", 0.0, 1.0),
    ("NOT MENTIONED.", 0.0, 0.0), ("TRUE", 1.0, 0.0)])
def test_parse_support(text, supported, contradicted):
    assert parse_support(text) == parse_support(text.upper()) is not None
    s = parse_support(text)
    assert (s.supported, s.contradicted) == (supported, contradicted)


def test_parse_garbage_and_relevance():
    assert parse_support("banana") is None and parse_support("") is None
    assert parse_relevance("YES") == 1.0 and parse_relevance("no, it is irrelevant") == 0.0
    assert parse_relevance("Not relevant") == 0.0 and parse_relevance("hmm") is None


def test_scorer_dedupes_and_retries_once(tmp_path):
    llm = FakeLLM({"Reply with exactly one word": "NOT_SUPPORTED", "<statement>odd": "hmm", "Premise:": "SUPPORTED"})
    scorer = LLMScorer(llm)
    out = scorer.support([("p", "a"), ("p", "a"), ("p", "odd")])
    assert [s.supported for s in out] == [1.0, 1.0, 0.0]
    assert len(llm.calls) == 3  # one for the duplicated pair, two (ask + stricter reminder) for "odd"
    assert llm.calls[-1][-1]["content"].startswith("Reply with exactly one word")


def test_scorer_nan_for_undecided_and_gives_up_on_a_dead_model():
    class Dead:
        model_id = "dead"
        calls = 0

        def chat(self, messages, **kw):
            Dead.calls += 1
            raise LLMError("connection refused")

    scorer = LLMScorer(Dead())
    out = scorer.support([(f"p{i}", "h") for i in range(10)])
    assert all(math.isnan(s.supported) for s in out)
    assert Dead.calls == 3 and all("connection refused" in r for r in scorer.failures.values())


@pytest.mark.parametrize("three_way", [False, True])
def test_llm_judge_all_metrics_garbage_is_unmeasured_rest_measured(tmp_path, three_way):
    judge = LLMJudge(claims_llm(), cache=tmp_path / "c.sqlite", three_way=three_way)
    assert (judge.name, judge.family) == ("llm", "llm")
    by = {m: dict(zip([s.sample_id for s in BATCH], judge.judge(m, BATCH))) for m in LLM_METRICS}
    for results in by.values():
        for r in results.values():
            check_result(r)
    for m in LLM_METRICS:
        g = by[m]["garbled"]
        assert g.status == "unmeasured" and g.reason == UNPARSEABLE, (m, g)
    assert by["groundedness"]["good"].value == 1.0
    wrong = by["groundedness"]["wrong"]
    assert wrong.value == 0.0
    assert wrong.evidence["claims"][0]["verdict"] == ("contradicted" if three_way else "unsupported")
    asked = judge.llm_scorer.llm.inner.calls[0]
    assert ("CONTRADICTED" in asked[0]["content"]) == three_way
    assert by["groundedness"]["garbled"].evidence["claims"][0]["verdict"] == "undecided"
    assert by["answer_correctness"]["good"].value == 1.0 and by["answer_correctness"]["wrong"].value == 0.0
    assert by["context_recall"]["good"].value == 1.0 and by["context_recall"]["wrong"].value == 1.0
    assert by["answer_relevance"]["good"].value == 1.0
    assert_refusal_rules(by, "llm")


def assert_refusal_rules(by: dict, judge: str) -> None:
    r = {m: by[m]["refused"] for m in LLM_METRICS}
    assert (r["groundedness"].status, r["groundedness"].value) == ("ok", 1.0)
    assert (r["answer_relevance"].status, r["answer_relevance"].value) == ("ok", 1.0)
    assert r["answer_correctness"].value == 1.0 and r["answer_correctness"].evidence["note"] == "correct refusal"
    assert r["context_recall"].status == "not_applicable"
    assert all(x.judge == judge for x in r.values())


def test_llm_judge_cache_hits_on_second_run(tmp_path):
    first = claims_llm()
    judge = LLMJudge(first, cache=tmp_path / "c.sqlite")
    a = judge.judge("groundedness", BATCH)
    assert judge.llm_scorer.llm.misses > 0 and first.calls
    second = claims_llm()
    again = LLMJudge(second, cache=tmp_path / "c.sqlite")
    b = again.judge("groundedness", BATCH)
    cache = again.llm_scorer.llm
    assert isinstance(cache, CachedLLM) and cache.misses == 0 and cache.hits > 0
    assert second.calls == []  # everything came from disk
    assert [r.model_dump() for r in a] == [r.model_dump() for r in b]


# the cache on its own -----------------------------------------------------------------------------------------------
def test_cache_key_covers_decoding_settings_and_errors_are_not_cached(tmp_path):
    msgs = [{"role": "user", "content": "hi"}]
    keys = {cache_key("m", msgs, 0.0, 8, 0), cache_key("m", msgs, 0.5, 8, 0), cache_key("m", msgs, 0.0, 9, 0),
            cache_key("m", msgs, 0.0, 8, 1), cache_key("n", msgs, 0.0, 8, 0)}
    assert len(keys) == 5

    class Flaky:
        model_id = "flaky"
        n = 0

        def chat(self, messages, **kw):
            Flaky.n += 1
            if Flaky.n == 1:
                raise LLMError("boom")
            return LLMResponse(text=f"reply {Flaky.n}", model="flaky", latency_s=0.0)

    llm = CachedLLM(Flaky(), tmp_path / "c.sqlite")
    assert llm.model_id == "flaky"
    with pytest.raises(LLMError):
        llm.chat(msgs)
    assert llm.chat(msgs).text == "reply 2" and llm.chat(msgs).text == "reply 2"
    assert (llm.hits, llm.misses, len(llm)) == (1, 2, 1)


def test_cache_is_thread_safe(tmp_path):
    llm = CachedLLM(FakeLLM({"": "ok"}), tmp_path / "c.sqlite")
    errors = []

    def work(i: int) -> None:
        try:
            for j in range(20):
                assert llm.chat([{"role": "user", "content": f"q{j % 5}"}], seed=i % 2).text == "ok"
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and llm.hits + llm.misses == 160 and len(llm) == 10


# ragas -------------------------------------------------------------------------------------------------------------
_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 3}


def sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


class RagasScript(FakeLLM):
    """Replies with exactly the JSON each ragas prompt's output model expects, computed from the prompt's
    input (a word-overlap 'judge'); garbage for the MARK sample; ``flaky`` text gets garbage first and is
    repaired by ragas' fix-output retry."""

    def __init__(self, flaky: str | None = None):
        super().__init__()
        self.flaky = flaky

    def reply(self, user_message: str) -> str:
        data = json.loads(user_message.split("\ninput: ", 1)[1].rsplit("\nOutput: ", 1)[0])
        head = user_message[:400]
        if "did not satisfy the constraints" in head:  # ragas' repair prompt: fix the original when we can
            if MARK in data["prompt_value"]:
                return "still not json"
            return json.dumps({"text": self.answer(data["prompt_value"][:400], _input(data["prompt_value"]))})
        if MARK in user_message or (self.flaky and self.flaky in user_message):
            return "Sure! Here is my verdict: the statement looks fine to me."
        return self.answer(head, data)

    def answer(self, head: str, d: dict) -> str:
        if "fully understandable statements" in head:
            return json.dumps({"statements": sentences(d["answer"])})
        if "faithfulness of a series of statements" in head:
            return json.dumps({"statements": [{"statement": s, "reason": "overlap", "verdict": int(words(s) <= words(d["context"]))}
                                              for s in d["statements"]]})
        if "context was useful" in head:
            return json.dumps({"reason": "overlap", "verdict": int(bool(words(d["answer"]) & words(d["context"])))})
        if "attributed to the given context" in head:
            return json.dumps({"classifications": [
                {"statement": s, "reason": "overlap", "attributed": int(words(s) <= words(d["context"]))}
                for s in sentences(d["answer"])]})
        if "noncommittal" in head:
            question = {x.answer: x.question for x in BATCH}.get(d["response"], d["response"])
            return json.dumps({"question": question, "noncommittal": int("know" in d["response"])})
        if "Decompose and break down" in head:
            return json.dumps({"claims": sentences(d["response"])})
        raise AssertionError(f"unexpected prompt: {head}")


def _input(prompt: str) -> dict:
    return json.loads(prompt.split("\ninput: ", 1)[1].rsplit("\nOutput: ", 1)[0])


@pytest.fixture(scope="module")
def ragas_judge_cls():
    from eval.judges.ragas_judge import RagasJudge

    return RagasJudge


def test_ragas_judge_all_metrics(ragas_judge_cls, tmp_path):
    judge = ragas_judge_cls(RagasScript(), FakeEmbedder(), cache=tmp_path / "c.sqlite")
    assert (judge.name, judge.family) == ("ragas", "llm") and all(judge.supports(m) for m in LLM_METRICS)
    by = {m: dict(zip([s.sample_id for s in BATCH], judge.judge(m, BATCH))) for m in LLM_METRICS}
    for results in by.values():
        for r in results.values():
            check_result(r)
            assert r.seconds is not None
    for m in LLM_METRICS:
        g = by[m]["garbled"]
        assert (g.status, g.reason) == ("unmeasured", UNPARSEABLE), (m, g)
        assert by[m]["good"].status == "ok" and by[m]["wrong"].status == "ok", m
    assert by["groundedness"]["good"].value == 1.0 and by["groundedness"]["wrong"].value == 0.0
    claims = by["groundedness"]["wrong"].evidence["claims"]
    assert claims == [{"claim": WRONG.answer, "verdict": "unsupported", "reason": "overlap"}]
    assert by["groundedness"]["good"].evidence["raw_score"] == 1.0
    assert by["answer_correctness"]["good"].value == 1.0 and by["answer_correctness"]["wrong"].value == 0.0
    wrong_ev = by["answer_correctness"]["wrong"].evidence
    assert wrong_ev["answer_claims"] == [{"claim": WRONG.answer, "verdict": "unsupported", "reason": None}]
    assert wrong_ev["reference_claims"][0]["claim"] == WRONG.reference
    assert by["answer_correctness"]["good"].evidence["reference_claims"][0]["verdict"] == "supported"
    assert by["context_recall"]["good"].value == 1.0
    assert by["context_precision"]["good"].evidence["chunks"][0]["relevant"] is True
    assert by["answer_relevance"]["good"].value == pytest.approx(1.0, abs=1e-6)
    assert_refusal_rules(by, "ragas")
    assert by["context_precision"]["refused"].status == "unmeasured"


def test_ragas_repair_retry_then_cache(ragas_judge_cls, tmp_path):
    llm = RagasScript(flaky="completed in 1925")
    judge = ragas_judge_cls(llm, FakeEmbedder(), cache=tmp_path / "c.sqlite")
    first = judge.judge("groundedness", [GOOD, WRONG])
    assert [r.status for r in first] == ["ok", "ok"] and first[1].value == 0.0  # repaired by one retry
    assert any("did not satisfy the constraints" in c[-1]["content"][:400] for c in llm.calls)
    again_llm = RagasScript(flaky="completed in 1925")
    again = ragas_judge_cls(again_llm, FakeEmbedder(), cache=tmp_path / "c.sqlite")
    second = again.judge("groundedness", [GOOD, WRONG])
    assert again_llm.calls == [] and again.llm.hits > 0 and again.llm.misses == 0
    assert [r.value for r in second] == [r.value for r in first]


def test_ragas_llm_errors_and_timeouts_become_unmeasured(ragas_judge_cls, tmp_path):
    class Broken:
        model_id = "broken"

        def chat(self, messages, **kw):
            raise LLMError("HTTP 500 from server")

    class Slow(RagasScript):
        def chat(self, messages, **kw):
            time.sleep(0.5)
            return super().chat(messages, **kw)

    from ragas.run_config import RunConfig

    judge = ragas_judge_cls(Broken(), FakeEmbedder(), cache=False)
    judge.ragas_llm.set_run_config(RunConfig(max_retries=1, max_wait=0))
    [r] = judge.judge("groundedness", [GOOD])
    assert r.status == "unmeasured" and r.reason.startswith("judge call failed") and "HTTP 500" in r.reason
    slow = ragas_judge_cls(Slow(), FakeEmbedder(), cache=False, timeout=0.2)
    [r] = slow.judge("groundedness", [GOOD])
    assert (r.status, r.reason) == ("unmeasured", "judge timed out after 0.2 s")


def test_ragas_truncated_output_is_unmeasured(ragas_judge_cls):
    class Truncating(RagasScript):
        def chat(self, messages, *, max_tokens=256, **kw):
            r = super().chat(messages, max_tokens=max_tokens, **kw)
            return r.model_copy(update={"text": r.text[:10], "completion_tokens": max_tokens})

    judge = ragas_judge_cls(Truncating(), FakeEmbedder(), cache=False, max_tokens=64)
    [r] = judge.judge("answer_relevance", [GOOD])
    assert (r.status, r.reason) == ("unmeasured", "judge output truncated at max_tokens=64")


class Recording:
    """Passes calls through and keeps (start of the last user message, reply) for the report."""

    def __init__(self, llm):
        self.llm, self.model_id, self.log = llm, llm.model_id, []

    def chat(self, messages, **kw):
        r = self.llm.chat(messages, **kw)
        user = [m["content"] for m in messages if m["role"] == "user"][-1]
        self.log.append((user.strip()[:60], r.text))
        return r


def test_ragas_nothing_to_score_is_unmeasured_not_nan(ragas_judge_cls):
    class Empty(RagasScript):
        def answer(self, head: str, d: dict) -> str:
            if "fully understandable statements" in head:
                return json.dumps({"statements": []})
            if "Decompose and break down" in head:
                return json.dumps({"claims": []})
            return super().answer(head, d)

    judge = ragas_judge_cls(Empty(), FakeEmbedder(), cache=False)
    [g] = judge.judge("groundedness", [GOOD])
    [c] = judge.judge("answer_correctness", [GOOD])
    assert (g.status, g.reason) == ("unmeasured", "ragas returned NaN: it found nothing to score")
    assert (c.status, c.reason) == ("unmeasured", "answer or reference has no claims (ragas decomposition)")


# the real bundled model ----------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.model
def test_both_judges_on_bundled_qwen(ragas_judge_cls, tmp_path):
    from rag.server import llm_for

    real, server = llm_for(None, "qwen2.5-0.5b", n_ctx=4096)
    llm = Recording(real)
    samples = [sample("faithful", "Where is the Eiffel Tower?", "The Eiffel Tower is in Paris.",
                      "The Eiffel Tower is in Paris."),
               sample("contradicted", "When was the Eiffel Tower completed?",
                      "The Eiffel Tower was completed in 1925.", "The Eiffel Tower was completed in 1889.")]
    report, timing = {}, {}
    try:
        from rag.embeddings import make_embedder

        judges = [LLMJudge(llm, cache=tmp_path / "c.sqlite"),
                  ragas_judge_cls(llm, make_embedder("minilm"), cache=tmp_path / "c.sqlite", timeout=600)]
        for judge in judges:  # ragas makes 4-6 model calls per metric: keep its part of this CPU test to one metric
            for m in (LLM_METRICS if judge.name == "llm" else ("groundedness",)):
                start = time.perf_counter()
                results = judge.judge(m, samples)
                timing[(judge.name, m)] = (time.perf_counter() - start) / len(samples)
                for s, r in zip(samples, results):
                    check_result(r)
                    assert r.status in ("ok", "unmeasured"), r
                    report[(judge.name, m, s.sample_id)] = (r.status, r.value, r.reason)
    finally:
        server.stop()
    asks = [u for u, _ in llm.log if not u.startswith(("Reply with exactly", "The output string did not"))]
    print(f"\n{len(llm.log)} model calls; {len(asks)} first asks; {sum(u.startswith('Reply with exactly') for u, _ in llm.log)}"
          f" llm-judge reminders; {sum(u.startswith('The output string did not') for u, _ in llm.log)} ragas repairs")
    print("bundled qwen2.5-0.5b judge results (s/sample is per metric, cold cache):")
    for (j, m, sid), (status, value, reason) in report.items():
        print(f"  {j:5} {m:18} {sid:12} {status:10} {value if value is None else round(value, 3)!s:6} "
              f"{timing[(j, m)]:6.1f} s/sample  {reason or ''}")


def test_swapping_a_judge_fleets_servers_keeps_its_name_and_its_cache(tmp_path):
    """``--judge-base-url a --judge-base-url b`` and ``b a`` are one judge: one name for the evaluation (config_id)
    and one cache key, so the second order re-judges nothing; a password in a URL is in neither."""
    from rag.fake_server import FakeOpenAIServer
    from rag.llm import OpenAIChatLLM

    with FakeOpenAIServer() as s1, FakeOpenAIServer() as s2:
        urls = [s1.base_url, s2.base_url.replace("//", "//user:s3cret@")]
        ask = [{"role": "user", "content": "Premise: x\nStatement: y\nAnswer YES or NO."}]
        judges = [LLMJudge(OpenAIChatLLM(order, model="m", max_retries=0), cache=tmp_path / "c.sqlite")
                  for order in (urls, urls[::-1])]
        assert judges[0].config_id == judges[1].config_id and "s3cret" not in judges[0].config_id
        first, second = (j.llm_scorer.llm for j in judges)
        assert first.chat(ask, max_tokens=12).text == second.chat(ask, max_tokens=12).text
        assert (first.misses, second.hits, s1.received + s2.received) == (1, 1, 1)
        assert cache_key(first.model_id, ask, 0.0, 12, 0) == cache_key(second.model_id, ask, 0.0, 12, 0)
    assert [p.name for p in tmp_path.iterdir() if b"s3cret" in p.read_bytes()] == []  # the cache and its WAL


def test_an_undecided_verdict_never_turns_into_not_applicable():
    """context_utilisation is not applicable when no claim of the reference is in the context: a verdict the model
    could not give (read as 0 for the arithmetic) made it 'not applicable' instead of unmeasured."""
    judge = LLMJudge(claims_llm(), cache=False)
    (r,) = judge.judge("context_utilisation", [GARBLED])
    assert r.status == "unmeasured" and r.reason == UNPARSEABLE, r
    (ok,) = judge.judge("context_utilisation", [GOOD])
    assert ok.status == "ok"
