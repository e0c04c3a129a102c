"""KV-cache prefix reuse: what the bundled llama.cpp server saves by keeping the grounded prompt's fixed prefix
(system prompt and chat template) between questions. Each question's real prompt (real retrieval over the bundled
corpus) is sent twice to the bundled model, once with llama.cpp's ``cache_prompt`` off and once on (the default),
alternating which goes first; prints per-question prompt tokens, cached tokens and the server's prompt-reading time
(the time to first token), and writes JSON.

    .venv/bin/python bench/kv_cache.py [--questions 8] [--model qwen2.5-0.5b] [--out bench/results/kv_cache.json]"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag.offline import set_offline_env  # noqa: E402

set_offline_env()

import numpy as np  # noqa: E402

from corpora.bundled import demo_questions  # noqa: E402
from rag.config import PipelineConfig  # noqa: E402
from rag.llm import FakeLLM  # noqa: E402
from rag.prompt import build_messages  # noqa: E402
from rag.server import LocalModelServer  # noqa: E402
from rag.session import open_pipeline  # noqa: E402
from ragdoctor.table import render  # noqa: E402


def ask(url: str, model: str, messages: list, cache: bool) -> dict:
    body = {"model": model, "messages": messages, "max_tokens": 1, "temperature": 0, "cache_prompt": cache}
    req = urllib.request.Request(url + "/chat/completions", json.dumps(body).encode(), {"Content-Type":
                                                                                         "application/json"})
    started = time.perf_counter()
    reply = json.loads(urllib.request.urlopen(req, timeout=600).read())
    t = reply.get("timings", {})
    return {"prompt_tokens": reply["usage"]["prompt_tokens"], "cached_tokens": t.get("cache_n", 0),
            "prompt_ms": t.get("prompt_ms"), "wall_ms": (time.perf_counter() - started) * 1000}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=8)
    ap.add_argument("--model", default="qwen2.5-0.5b")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "kv_cache.json"))
    args = ap.parse_args()
    questions = demo_questions()[: args.questions]
    with tempfile.TemporaryDirectory() as tmp, \
            open_pipeline(PipelineConfig(index_dir=str(Path(tmp) / "index")), llm=FakeLLM()) as p:
        prompts = [build_messages(q.question, [(c.chunk_id, c.text) for c in p.retrieve(q.question)[:p.cfg.retrieval.top_k]])
                   for q in questions]
    rows = []
    with LocalModelServer(args.model, n_ctx=4096) as server:
        ask(server.base_url, server.name, prompts[0], True)  # warm-up: loads the weights' pages, fills the prefix
        for i, (q, messages) in enumerate(zip(questions, prompts)):
            order = (False, True) if i % 2 == 0 else (True, False)
            got = {}
            for c in order:  # before each: the slot holds the shared prefix only, as after any other question
                ask(server.base_url, server.name, messages[:1], True)
                got[c] = ask(server.base_url, server.name, messages, c)
            rows.append({"question": q.id, "off": got[False], "on": got[True]})
    table = [(r["question"], r["on"]["prompt_tokens"], r["on"]["cached_tokens"], r["off"]["prompt_ms"],
              r["on"]["prompt_ms"]) for r in rows]
    off = np.array([r["off"]["prompt_ms"] for r in rows])
    on = np.array([r["on"]["prompt_ms"] for r in rows])
    summary = {"model": args.model, "questions": len(rows), "prompt_tokens_mean": float(np.mean([r["on"]["prompt_tokens"] for r in rows])),
               "cached_tokens_mean": float(np.mean([r["on"]["cached_tokens"] for r in rows])),
               "ttft_ms_p50_cache_off": float(np.median(off)), "ttft_ms_p50_cache_on": float(np.median(on)),
               "saving_share": float(1 - on.sum() / off.sum())}
    print(render(["question", "prompt tokens", "cached", "read ms (cache off)", "read ms (cache on)"], table))
    print(f"\nmean prompt {summary['prompt_tokens_mean']:.0f} tokens, {summary['cached_tokens_mean']:.0f} cached; "
          f"time to first token p50 {summary['ttft_ms_p50_cache_off']:.0f} ms -> {summary['ttft_ms_p50_cache_on']:.0f} ms "
          f"({summary['saving_share']:.0%} of prompt reading saved)")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
