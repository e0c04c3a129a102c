"""rag/offline.py: importing ragdoctor changes no environment variable, the API sets the offline environment on its
first call (values the user set win), and what the API runs opens no socket to a non-loopback address even in a
process whose huggingface_hub was imported online before ragdoctor."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rag.offline import OFFLINE_ENV, set_offline_env

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str, tmp_path: Path, **env: str) -> dict:
    """``code`` in a fresh interpreter whose environment has none of OFFLINE_ENV (the netguard stays on); the JSON
    it prints last."""
    clean = {k: v for k, v in os.environ.items() if k not in OFFLINE_ENV}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env={**clean, "PYTHONPATH": os.pathsep.join([str(ROOT), clean.get("PYTHONPATH", "")]),
                               **env})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_set_offline_env_keeps_values_the_user_set(monkeypatch):
    for key in OFFLINE_ENV:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("DO_NOT_TRACK", "")  # set, if empty: the user's
    assert set_offline_env() == [k for k in OFFLINE_ENV if k not in ("HF_HUB_OFFLINE", "DO_NOT_TRACK")]
    assert os.environ["HF_HUB_OFFLINE"] == "0" and os.environ["DO_NOT_TRACK"] == ""
    assert os.environ["TRANSFORMERS_OFFLINE"] == "1"
    assert set_offline_env() == []  # nothing left to set


def test_importing_ragdoctor_sets_nothing_and_the_first_call_says_what_it_set(tmp_path):
    code = """
import json, logging, os
before = dict(os.environ)
import rag, rag.embeddings, ragdoctor.api, ragdoctor.integrations.llamaindex
imported = {k: v for k, v in os.environ.items() if before.get(k) != v}
notes = []
logging.getLogger("ragdoctor.notices").addHandler(type("H", (logging.Handler,), {"emit": lambda s, r: notes.append(r.getMessage())})())
logging.getLogger("ragdoctor.notices").setLevel(logging.INFO)
os.environ["HF_HUB_OFFLINE"] = "0"  # the host's own choice
ragdoctor.api.evaluate([{"id": "a", "question": "q?", "answer": "The sky is blue.", "contexts": ["The sky is blue."]}],
                       judges="lexical", out="run")
print(json.dumps({"imported": imported, "after": {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")},
                  "notes": [n for n in notes if "runs offline" in n]}))
"""
    out = _run(code, tmp_path)
    assert not set(out["imported"]) & set(OFFLINE_ENV)  # (scikit-learn's import sets KMP_*: not ours)
    assert out["after"] == {"HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "1"}
    assert len(out["notes"]) == 1 and "TRANSFORMERS_OFFLINE=1" in out["notes"][0]
    assert "HF_HUB_OFFLINE" not in out["notes"][0]


@pytest.mark.model
def test_what_the_api_runs_opens_no_socket_even_with_the_hub_imported_online(tmp_path):
    """The worst case for the environment variables: the host imported huggingface_hub and transformers online
    before ragdoctor, so setting them later changes nothing there. Models still load from local folders only: every
    connect and every name lookup the API makes is recorded, and none leaves the machine."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "kv.md").write_text("# KV cache\n\nThe KV cache stores the keys and values of every previous token.\n")
    (docs / "zero.md").write_text("# ZeRO\n\nZeRO stage 2 partitions optimizer states and gradients across ranks.\n")
    code = """
import ipaddress, json, socket, sys
import huggingface_hub.constants, transformers  # the host's, first: the hub is online for the whole process
hub_online = not huggingface_hub.constants.HF_HUB_OFFLINE
remote = []

def local(host):
    if host in (None, "", "localhost") or isinstance(host, (bytes, str)) and str(host).startswith("/"):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False

def recording(real, at):
    def call(*args, **kwargs):
        target = args[at] if len(args) > at else None
        host = target[0] if isinstance(target, tuple) else target
        if not local(host):
            remote.append(repr(target))
        return real(*args, **kwargs)
    return call

socket.socket.connect = recording(socket.socket.connect, 1)
socket.socket.connect_ex = recording(socket.socket.connect_ex, 1)
socket.getaddrinfo = recording(socket.getaddrinfo, 0)
socket.gethostbyname = recording(socket.gethostbyname, 0)
try:  # the canary: the recorder sees a remote connect (the netguard refuses it before any packet)
    socket.socket().connect(("192.0.2.1", 9))
except Exception:
    pass
canary = remote[:]
del remote[:]
import ragdoctor
from rag.llm import FakeLLM
row = {"id": "kv", "question": "What does the KV cache store?", "answer": "It stores keys and values.",
       "contexts": ["The KV cache stores the keys and values of every previous token."], "reference": "Keys and values."}
result = ragdoctor.evaluate([row], judges="nli,embedding", metrics="groundedness,answer_relevance", out="run")
with ragdoctor.Pipeline({"corpus": "docs", "index_dir": "index"}, llm=FakeLLM()) as pipe:
    pipe.index()
    trace = pipe.ask("What does the KV cache store?")
print(json.dumps({"hub_online": hub_online, "canary": canary, "remote": remote, "measured": int(result.summary()["n"].sum()),
                  "answer": trace.answer, "loaded": "sentence_transformers" in sys.modules}))
"""
    out = _run(code, tmp_path, RAGDOCTOR_CACHE=str(tmp_path / "cache"))  # no cached vector: the models load
    assert out["hub_online"] and out["loaded"] and out["measured"] == 4 and "keys and values" in out["answer"]
    assert out["canary"] == ["('192.0.2.1', 9)"] and out["remote"] == []
