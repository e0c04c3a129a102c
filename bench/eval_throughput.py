"""Evaluation throughput: samples/second for the full metric set, per judge family, on the bundled question set,
side by side with plain ragas ``evaluate()`` driven by the same local model. Prints a table, writes JSON.

    .venv/bin/python bench/eval_throughput.py [--traces runs/demo/traces.jsonl] [--llm-limit 2] [--judge-base-url URL]

Without --traces, answers come from the deterministic fake generator (the retrieval is real), which is enough to
time the judges. LLM families (our claim-level judge, our ragas judge, plain ragas) run on the first --llm-limit
samples with cold caches; the model-free and small-model families run on every sample."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag.offline import set_offline_env  # noqa: E402

set_offline_env()

from eval.adapters import load_traces  # noqa: E402
from eval.judges.registry import JudgeOptions, UnavailableJudge, make_judge  # noqa: E402
from eval.metrics import model_metrics  # noqa: E402
from rag.config import GenerationConfig, PipelineConfig  # noqa: E402
from rag.embeddings import make_embedder  # noqa: E402
from rag.llm import FakeLLM  # noqa: E402
from rag.session import open_generator  # noqa: E402
from ragdoctor import flow  # noqa: E402
from ragdoctor.table import render  # noqa: E402

METRICS = [m.name for m in model_metrics(default_only=True)]


def fake_traces(out: Path) -> Path:
    cfg = PipelineConfig(index_dir=str(ROOT / ".ragdoctor" / "index"))
    flow.answer_questions(cfg, out, llm=FakeLLM(), progress=False)
    return out


def time_judge(judge, samples) -> dict:
    start = time.perf_counter()
    judgements = flow.judge(samples, [judge], METRICS, batch_size=16)
    secs = time.perf_counter() - start
    results = [r for j in judgements for r in j.results]
    return {"samples": len(samples), "seconds": round(secs, 2), "samples_per_s": round(len(samples) / secs, 4),
            "unmeasured": sum(r.status == "unmeasured" for r in results), "results": len(results)}


def time_plain_ragas(llm, embedder, samples) -> dict:
    """ragas' own evaluate() with the same model, metrics passed explicitly, nothing of ours in between but the
    adapters that let ragas talk to the local model."""
    from ragas import EvaluationDataset, evaluate  # noqa: PLC0415 - ragas: seconds, only without --skip-llm
    from ragas.metrics import (  # noqa: PLC0415 - see above
        FactualCorrectness,
        Faithfulness,
        LLMContextPrecisionWithReference,
        LLMContextRecall,
        ResponseRelevancy,
    )

    from eval.judges.ragas_judge import ChatLLMAdapter, EmbedderAdapter  # noqa: PLC0415 - see above

    rows = [{"user_input": s.question, "retrieved_contexts": s.context_texts, "response": s.answer,
             "reference": s.reference or ""} for s in samples]
    metrics = [Faithfulness(), LLMContextPrecisionWithReference(), ResponseRelevancy(), LLMContextRecall(),
               FactualCorrectness(mode="f1")]
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = evaluate(EvaluationDataset.from_list(rows), metrics=metrics, llm=ChatLLMAdapter(llm),
                          embeddings=EmbedderAdapter(embedder), show_progress=False, raise_exceptions=False)
    secs = time.perf_counter() - start
    df = result.to_pandas()
    nan = int(df[[c for c in df.columns if c not in ("user_input", "retrieved_contexts", "response", "reference")]]
              .isna().sum().sum())
    return {"samples": len(samples), "seconds": round(secs, 2), "samples_per_s": round(len(samples) / secs, 4),
            "nan_values": nan}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", help="traces.jsonl to judge (default: fake-generator answers on the bundled set)")
    ap.add_argument("--llm-limit", type=int, default=2, help="samples for the LLM families (default 2)")
    ap.add_argument("--judge-base-url", help="OpenAI-compatible endpoint (default: the bundled Qwen2.5-0.5B)")
    ap.add_argument("--judge-model", default="qwen2.5-0.5b")
    ap.add_argument("--skip-llm", action="store_true", help="only the model-free and small-model families")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "eval_throughput.json"))
    args = ap.parse_args(argv)

    cache = tempfile.mkdtemp(prefix="ragdoctor-bench-")
    try:
        os.environ["RAGDOCTOR_CACHE"] = cache  # cold caches: every judge call is really made
        traces = Path(args.traces) if args.traces else fake_traces(Path(cache) / "traces.jsonl")
        samples, _ = load_traces(traces)
        embedder = make_embedder("minilm")
        opts = JudgeOptions(embedder=embedder)
        report: dict = {"traces": str(traces), "n_samples": len(samples), "metrics": METRICS, "families": {}}
        for name in ("lexical", "embedding", "nli"):
            try:
                judge = make_judge(name, opts)
            except Exception as exc:  # noqa: BLE001 - reported, not raised
                report["families"][name] = {"unavailable": str(exc)}
                continue
            report["families"][name] = time_judge(judge, samples)
        if not args.skip_llm:
            few = samples[: args.llm_limit]
            gen = PipelineConfig(generation=GenerationConfig(base_url=args.judge_base_url, model=args.judge_model))
            with open_generator(gen) as llm:
                for name in ("llm", "ragas"):
                    judge = make_judge(name, JudgeOptions(embedder=embedder, llm_factory=lambda: llm))
                    if not isinstance(judge, UnavailableJudge):
                        report["families"][name] = time_judge(judge, few)
                report["families"]["plain ragas evaluate()"] = time_plain_ragas(llm, embedder, few)
            ours = report["families"].get("ragas", {}).get("samples_per_s")
            plain = report["families"]["plain ragas evaluate()"]["samples_per_s"]
            if ours and plain:
                report["ragas_judge_vs_plain_ratio"] = round(ours / plain, 3)
        rows = [(name, r.get("samples"), r.get("seconds"), r.get("samples_per_s"), r.get("unmeasured", r.get("nan_values")),
                 r.get("unavailable", "")) for name, r in report["families"].items()]
        print(render(["judge family", "samples", "seconds", "samples/s", "unmeasured/NaN", "note"], rows,
                     title=f"full metric set ({len(METRICS)} metrics) per sample"))
        if "ragas_judge_vs_plain_ratio" in report:
            print(f"\nragdoctor's ragas judge vs plain ragas evaluate(): {report['ragas_judge_vs_plain_ratio']}x samples/s")
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=2), encoding="utf-8")
    finally:
        shutil.rmtree(cache, ignore_errors=True)  # cold caches of this bench alone: not left in /tmp
    print(f"\nJSON: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
