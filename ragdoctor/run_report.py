"""The summary a pipeline run prints: answered/refused/errors, retrieval recall@k, latency p50/p95 per stage, and the
prompt tokens the generator read and its KV cache held (when the server reports them)."""
from __future__ import annotations

import json
from collections import Counter

import numpy as np

from corpora.records import MetricResult, Trace
from eval.metrics import get
from eval.metrics.retrieval import ranking
from eval.retrieval_metrics import mean_metrics, retrieval_metrics
from ragdoctor.table import render


def retrieval_left_out(t: Trace) -> MetricResult | None:
    """Why ``eval``'s retrieval metrics do not measure this trace (their ``unmeasured`` or ``not_applicable`` result,
    with its reason), None when they do: the rule the run summary and the dashboard's recall curve read, the metrics'
    own (eval.metrics.retrieval; it is the same for every kind and k), never a copy. Left out: no relevance label (or
    none graded above 0), no contexts recorded, a question blocked before retrieval, contexts that carry no doc_id."""
    return get("recall@1").fixed(t, "labels")


def left_out_counts(results: list[MetricResult]) -> dict[str, dict[str, int]]:
    """{status: {reason: traces}} of the results ``retrieval_left_out`` gave, most frequent reason first."""
    counts = Counter((r.status, r.reason or "") for r in results)
    out: dict[str, dict[str, int]] = {}
    for (status, reason), n in counts.most_common():
        out.setdefault(status, {})[reason] = n
    return out


def summarize_traces(traces: list[Trace], k: int = 5) -> dict:
    outcomes = Counter(t.outcome for t in traces)
    # the traces eval's retrieval metrics measure (labelled, retrieved for, the contexts' documents known); the others
    # are left out with eval's reason, never a 0: a question stopped before retrieval (a guardrail) is no retrieval
    # miss, and contexts without doc ids say nothing about which documents were found. Keyed by position, as the
    # metrics key them: two traces of one sample id keep their own rankings.
    verdicts = [retrieval_left_out(t) for t in traces]
    measured = {str(i): t for i, (t, v) in enumerate(zip(traces, verdicts)) if v is None}
    # labelled traces left out (an unlabelled question is not counted: it has nothing to leave out)
    left_out = left_out_counts([v for t, v in zip(traces, verdicts) if v is not None and t.relevance_grades])
    qrels = {i: t.relevance_grades for i, t in measured.items()}
    # the full ranking: the chunks given to the generator and the candidates left out, in the retriever's rank order
    # (as the retrieval metrics read it)
    rankings = {i: ranking(t)[0] for i, t in measured.items()}
    retrieval = mean_metrics(retrieval_metrics(qrels, rankings, ks=(1, k)))
    stages = sorted({s for t in traces for s in t.latency_ms})
    latency = {s: {"p50": float(np.percentile(v, 50)), "p95": float(np.percentile(v, 95)), "n": len(v)}
               for s in stages if (v := [t.latency_ms[s] for t in traces if s in t.latency_ms])}
    out = {"questions": len(traces), "outcomes": dict(outcomes), "labelled_queries": len(qrels),
           "retrieval": retrieval, "retrieval_left_out": left_out, "latency_ms": latency}
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
        (f"recall@{k} (docs, {summary['labelled_queries']} labelled queries measured)", r.get(f"recall@{k}")),
        (f"mrr@{k}", r.get(f"mrr@{k}")),
    ]
    for status, reasons in (summary.get("retrieval_left_out") or {}).items():  # labelled, yet not measured: why
        rows += [(f"left out ({status.replace('_', ' ')}): {reason}", n) for reason, n in reasons.items()]
    if summary.get("prompt_tokens"):
        p = summary["prompt_tokens"]
        share = f"{p['cached_share']:.0%}" if p["cached_share"] is not None else "-"
        told = f"{int(p['prompt_tokens'])} ({int(p['cached_tokens'])}, {share})"
        rows.append(("prompt tokens (cached by the server)", told))
    lat = [(stage, v["p50"], v["p95"]) for stage, v in summary["latency_ms"].items()]
    return render(["run", "value"], rows) + "\n\n" + render(["stage", "p50 ms", "p95 ms"], lat)
