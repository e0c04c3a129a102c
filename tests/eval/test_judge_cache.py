"""eval/judge_cache.py never stops a run: a damaged cache file is set aside (kept, renamed) and a new one started, with
one warning naming both; a cache that cannot be made leaves the judge uncached, warned; an entry that cannot be read
is a miss, asked again and overwritten; a reply cached before LLMResponse had a finish reason still reads."""
from __future__ import annotations

import logging
import sqlite3

import pytest

from corpora.records import Chunk, Trace
from eval.judge_cache import CachedLLM, cache_key
from eval.judges.llm_claims import LLMJudge
from rag.llm import FakeLLM

ASK = [{"role": "user", "content": "Premise: x\nStatement: y\nAnswer YES or NO."}]
TRACE = Trace(sample_id="s", question="Where is the Eiffel Tower?", answer="The Eiffel Tower is in Paris.",
              contexts=[Chunk(chunk_id="s#0", text="The Eiffel Tower is in Paris.", rank=1)])


@pytest.fixture
def notices(caplog):
    caplog.set_level(logging.WARNING, logger="ragdoctor.notices")
    return caplog


def warnings_of(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "ragdoctor.notices"]


def test_a_damaged_cache_file_is_set_aside_and_a_new_one_started(tmp_path, notices):
    path = tmp_path / "judge_cache.sqlite"
    path.write_bytes(b"not sqlite\n")
    judge = LLMJudge(FakeLLM({"Premise:": "YES", "Passage:": "YES"}), cache=path)
    [r] = judge.judge("groundedness", [TRACE])
    assert r.status == "ok" and r.value == 1.0
    [aside] = [p for p in tmp_path.iterdir() if p.name.startswith("judge_cache.sqlite.damaged-")]
    assert aside.read_bytes() == b"not sqlite\n"  # kept as it was, for whoever wants to look
    [message] = warnings_of(notices)
    assert str(path) in message and str(aside) in message and "\n" not in message
    assert "file is not a database" in message
    again = LLMJudge(FakeLLM(), cache=path)  # the new cache serves the next run
    assert again.judge("groundedness", [TRACE])[0].value == 1.0 and again.llm_scorer.llm.misses == 0


def test_a_database_that_is_not_a_cache_is_set_aside_too(tmp_path, notices):
    path = tmp_path / "c.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE chat (id INTEGER, other TEXT)")
    conn.commit()
    conn.close()
    cache = CachedLLM(FakeLLM({"": "ok"}), path)
    assert cache.chat(ASK).text == "ok" and cache.uncached is None and len(cache) == 1
    assert any(p.name.startswith("c.sqlite.damaged-") for p in tmp_path.iterdir())
    assert "not key, model and response" in warnings_of(notices)[0]


def test_a_cache_that_cannot_be_made_leaves_the_judge_uncached_with_a_warning(tmp_path, notices):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    cache = CachedLLM(FakeLLM({"": "ok"}), blocker / "judge_cache.sqlite")  # its folder would be a file
    assert cache.chat(ASK).text == "ok" and cache.chat(ASK).text == "ok"
    assert (cache.hits, cache.misses, len(cache)) == (0, 2, 0)
    [message] = warnings_of(notices)
    assert message.startswith(f"warning: judge cache {blocker / 'judge_cache.sqlite'} cannot be used")
    assert "judging without a cache" in message and cache.uncached
    cache.close()


def test_a_damaged_entry_is_asked_again_and_overwritten(tmp_path, notices):
    path = tmp_path / "c.sqlite"
    llm = FakeLLM({"": "ok"})
    cache = CachedLLM(llm, path)
    cache.chat(ASK)
    key = cache_key(cache.model_id, ASK, 0.0, 256, 0)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE chat SET response=? WHERE key=?", ('{"text": "ok", "mod', key))
    assert cache.chat(ASK).text == "ok" and len(llm.calls) == 2 and cache.unreadable == 1
    assert cache.chat(ASK).text == "ok" and len(llm.calls) == 2  # overwritten: a hit again
    assert (cache.hits, cache.misses) == (1, 2)
    assert len(warnings_of(notices)) == 1 and "unreadable entries" in warnings_of(notices)[0]


def test_a_damaged_entry_does_not_fail_the_judges_batch(tmp_path):
    path = tmp_path / "c.sqlite"
    LLMJudge(FakeLLM({"Premise:": "YES"}), cache=path).judge("groundedness", [TRACE])
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE chat SET response='not json'")
    [r] = LLMJudge(FakeLLM({"Premise:": "YES"}), cache=path).judge("groundedness", [TRACE])
    assert (r.status, r.value) == ("ok", 1.0)


def test_a_reply_cached_before_the_finish_reason_was_recorded_still_reads(tmp_path):
    path = tmp_path / "c.sqlite"
    cache = CachedLLM(FakeLLM(), path)
    key = cache_key(cache.model_id, ASK, 0.0, 256, 0)
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO chat VALUES (?, ?, ?)",
                     (key, cache.model_id, '{"text": "YES", "model": "fake-llm", "prompt_tokens": 3, '
                                           '"completion_tokens": 1, "latency_s": 0.01}'))
    got = cache.chat(ASK)
    assert (got.text, got.finish_reason, cache.hits) == ("YES", None, 1)


def test_a_failing_write_keeps_the_reply(tmp_path, notices):
    cache = CachedLLM(FakeLLM({"": "ok"}), tmp_path / "c.sqlite")
    with sqlite3.connect(tmp_path / "c.sqlite") as conn:
        conn.execute("DROP TABLE chat")
    assert cache.chat(ASK).text == "ok" and cache.chat(ASK).text == "ok"
    messages = warnings_of(notices)
    assert any("cannot be read" in m for m in messages) and any("cannot be written" in m for m in messages)
    assert len(messages) == 2  # each warned once
