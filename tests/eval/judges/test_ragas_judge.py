"""eval/judges/ragas_judge.py's environment: RAGAS_DO_NOT_TRACK defaults to true, a value the user set is kept, and a
value that turns ragas' telemetry on makes the judge unavailable (it would reach the network), saying why."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CODE = """
import json, os
import eval.judges.ragas_judge as rj
from eval.judges.base import JudgeUnavailable
from rag.llm import FakeLLM
after_import = os.environ.get("RAGAS_DO_NOT_TRACK")
def build():
    try:
        rj.RagasJudge(FakeLLM(), cache=False)
        return "built"
    except JudgeUnavailable as exc:
        return str(exc)
first = build()
os.environ["RAGAS_DO_NOT_TRACK"] = "True"  # changed after import: read again when the next judge is built
print(json.dumps({"after_import": after_import, "first": first, "then": build()}))
"""


@pytest.mark.parametrize(("given", "kept", "first"), [
    (None, "true", "built"),
    ("false", "false", "RAGAS_DO_NOT_TRACK='false' turns on ragas' usage telemetry"),
    ("TRUE", "TRUE", "built"),
])
def test_the_users_value_wins_and_telemetry_on_is_refused(given, kept, first):
    env = {k: v for k, v in os.environ.items() if k != "RAGAS_DO_NOT_TRACK"}
    if given is not None:
        env["RAGAS_DO_NOT_TRACK"] = given
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["after_import"] == kept
    assert out["first"].startswith(first) and out["then"] == "built"


def test_langsmith_tracing_turned_on_makes_the_judge_unavailable(monkeypatch):
    from eval.judges.base import JudgeUnavailable
    from eval.judges.ragas_judge import check_telemetry_off

    monkeypatch.setenv("RAGAS_DO_NOT_TRACK", "true")
    for name in ("LANGCHAIN_TRACING_V2", "LANGSMITH_TRACING"):
        monkeypatch.setenv(name, "true")
        with pytest.raises(JudgeUnavailable, match=f"{name}='true' turns on LangSmith tracing"):
            check_telemetry_off()
        monkeypatch.setenv(name, "false")
    check_telemetry_off()  # tracing off: the judge may run


def test_the_judges_name_carries_every_setting_that_changes_a_value_and_defaults_keep_their_name():
    from eval.judges.ragas_judge import RagasJudge
    from rag.embeddings import FakeEmbedder
    from rag.llm import FakeLLM

    llm = FakeLLM()
    assert RagasJudge(llm, cache=False).config_id == "ragas:fake-llm"  # as before: caches and resumed runs hold
    assert RagasJudge(llm, cache=False, timeout=5, concurrency=4).config_id == "ragas:fake-llm"  # changes no value
    named = {RagasJudge(llm, cache=False, **kw).config_id for kw in
             ({}, {"max_tokens": 2048}, {"parse_retries": 0}, {"seed": 3}, {"embedder": FakeEmbedder()})}
    assert len(named) == 5
    assert RagasJudge(llm, cache=False, max_tokens=256, parse_retries=2).config_id == \
        "ragas:fake-llm@max_tokens=256@parse_retries=2"
    assert RagasJudge(llm, FakeEmbedder(), cache=False).config_id == "ragas:fake-llm@embedder=fake-embedder-256"


def test_a_reply_is_truncated_when_the_server_says_so_not_when_it_merely_fills_max_tokens():
    from eval.judges.ragas_judge import ChatLLMAdapter
    from rag.llm import LLMResponse

    class Replies:
        model_id = "r"

        def __init__(self, **kw):
            self.kw = kw

        def chat(self, messages, **kw):
            return LLMResponse(text="{}", model="r", latency_s=0.0, **self.kw)

    def truncated(**kw) -> bool:
        return ChatLLMAdapter(Replies(**kw), max_tokens=8)._one([], 0.0, 0).generation_info["finish_reason"] == "length"

    assert not truncated(completion_tokens=8, finish_reason="stop")  # exactly max_tokens long, and finished
    assert truncated(completion_tokens=5, finish_reason="length")
    assert truncated(completion_tokens=8) and not truncated(completion_tokens=7)  # no reason given: the count tells
