"""The summary a pipeline run prints: answered/refused/errors, retrieval recall@k, latency p50/p95 per stage, and the
prompt tokens the generator read and its KV cache held (when the server reports them)."""
from __future__ import annotations

import json
from collections import Counter

import numpy as np

from corpora.records import Trace
from eval.metrics.retrieval import ranking
from eval.retrieval_metrics import mean_metrics, retrieval_metrics
from ragdoctor.table import render


def summarize_traces(traces: list[Trace], k: int = 5) -> dict:
    outcomes = Counter(t.outcome for t in traces)
    # labelled questions that were retrieved for: one stopped before retrieval (a guardrail) is no retrieval miss
    qrels = {t.sample_id: t.relevance_grades for t in traces if t.relevant_doc_ids and t.contexts is not None}
    # the full ranking: the chunks given to the generator and the candidates left out, in the retriever's rank order
    # (as the retrieval metrics read it)
    rankings = {t.sample_id: ranking(t)[0] for t in traces}
    retrieval = mean_metrics(retrieval_metrics(qrels, rankings, ks=(1, k)))
    stages = sorted({s for t in traces for s in t.latency_ms})
    latency = {s: {"p50": float(np.percentile(v, 50)), "p95": float(np.percentile(v, 95)), "n": len(v)}
               for s in stages if (v := [t.latency_ms[s] for t in traces if s in t.latency_ms])}
    out = {"questions": len(traces), "outcomes": dict(outcomes), "labelled_queries": len(qrels),
           "retrieval": retrieval, "latency_ms": latency}
    tokens = prompt_tokens(traces)
    if tokens:
        out["prompt_tokens"] = tokens
    return out


def prompt_tokens(traces: list[Trace]) -> dict | None:
    """Prompt tokens over the traces whose server said both counts: read, held by the KV cache (the shared prefix:
    system prompt and chat template), their share, and prompt tokens read per second. None when none said."""
    told = [t for t in traces if "prompt_tokens" in t.usage and "cached_tokens" in t.usage]
    if not told:
        return None
    total = sum(t.usage["prompt_tokens"] for t in told)
    cached = sum(t.usage["cached_tokens"] for t in told)
    read_ms = [t.latency_ms["read_prompt"] for t in told if "read_prompt" in t.latency_ms]  # the same traces' time
    fresh = total - cached
    return {"n": len(told), "prompt_tokens": total, "cached_tokens": cached,
            "cached_share": cached / total if total else None,
            "read_tokens_per_s": fresh / (sum(read_ms) / 1000) if read_ms and sum(read_ms) > 0 else None}


def is_run_summary(text: str) -> bool:
    """Whether a run_summary.json is one this project wrote (else it is left alone)."""
    data = json.loads(text)
    return isinstance(data, dict) and {"questions", "outcomes", "retrieval"} <= set(data)


def render_summary(summary: dict, k: int = 5) -> str:
    o = summary["outcomes"]
    r = summary["retrieval"]
    rows = [
        ("questions", summary["questions"]),
        ("answered", o.get("answered", 0)),
        ("refused", o.get("refused", 0)),
        ("blocked", o.get("blocked", 0)),
        ("errors", o.get("error", 0)),
        (f"recall@{k} (docs, {summary['labelled_queries']} labelled)", r.get(f"recall@{k}")),
        (f"mrr@{k}", r.get(f"mrr@{k}")),
    ]
    if summary.get("prompt_tokens"):
        p = summary["prompt_tokens"]
        share = f"{p['cached_share']:.0%}" if p["cached_share"] is not None else "-"
        told = f"{int(p['prompt_tokens'])} ({int(p['cached_tokens'])}, {share})"
        rows.append(("prompt tokens (cached by the server)", told))
    lat = [(stage, v["p50"], v["p95"]) for stage, v in summary["latency_ms"].items()]
    return render(["run", "value"], rows) + "\n\n" + render(["stage", "p50 ms", "p95 ms"], lat)
