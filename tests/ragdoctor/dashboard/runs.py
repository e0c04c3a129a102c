"""Run folders for the dashboard tests, made by the project's own code: a small hand-made one (lexical + a strict
lexical judge + labels: no model) and a large synthetic one with the shape (not the meaning) of a real run."""
from __future__ import annotations

import json
import random
from pathlib import Path

from corpora.jsonl import append_json_line
from corpora.records import Candidate, Chunk, Judgement, MetricResult, Trace
from corpora.run_folder import RunFolder
from diagnostics.report import diagnose
from eval.judges.labels import LabelsJudge
from eval.judges.lexical import LexicalScorer
from eval.judges.scorer import ScorerJudge
from eval.judging import evaluate, write_outputs
from eval.metrics import model_metrics
from ragdoctor.run_report import summarize_traces

LLM_METRICS = [m.name for m in model_metrics(default_only=True)]

ROOT = Path(__file__).resolve().parents[3]
APP = ROOT / "app.py"

DOCS = {
    "cur": "Updated 2025: the default block size is 16 tokens. Blocks live in GPU memory.",
    "old": "Note 2023: the default block size is 32 tokens.",
    "lora": "LoRA adds low-rank adapters to frozen weights. The rank r is often 8.",
    "ring": "Ring all-reduce sends about twice the gradient size per GPU, whatever the number of GPUs.",
    "noise": "Unrelated text about tokenizers and byte pair encoding merges.",
}
BLOCK_Q = "What is the default block size?"
# id: (question, reference, relevant docs, retrieved docs, candidate docs past the cut, answer, outcome)
SAMPLES = {
    "ok-block": (BLOCK_Q, "The default block size is 16 tokens.", ["cur"], ["cur", "noise"], [],
                 "The default block size is 16 tokens [cur#0].", "answered"),
    "stale-block": (BLOCK_Q, "It is 16 tokens per block.", ["cur"], ["old", "cur"], [],
                    "The default block size is 32 tokens [old#0].", "answered"),
    "miss-lora": ("What rank do LoRA adapters use?", "The rank r is often 8.", ["lora"], ["noise", "ring"], ["old"],
                  "The rank is 64 for every adapter, and adapters replace the weights.", "answered"),
    "cut-ring": ("How much does ring all-reduce send per GPU?", "About twice the gradient size per GPU.", ["ring"],
                 ["noise", "old"], ["cur", "ring"], "I don't know based on the provided documents.", "answered"),
    "unanswerable": ("Who invented the block allocator?", "The provided documents do not contain the answer.", [],
                     ["cur"], [], "The block allocator was invented by Ada Lovelace.", "answered"),
    "broken": ("What rank do LoRA adapters use?", "The rank r is often 8.", ["lora"], ["lora"], [], "", "error"),
    "ok-lora": ("What do LoRA adapters add?", "LoRA adds low-rank adapters to frozen weights.", ["lora"],
                ["lora", "noise"], [], "LoRA adds low-rank adapters to frozen weights [lora#0].", "answered"),
}
# run B: the same questions, one answer got worse (a regression) and one better (a fix)
CHANGES_B = {"ok-block": "The default block size is 64 tokens and blocks live on disk.",
             "miss-lora": "LoRA adapters use rank 8 most often."}


def strict_lexical() -> ScorerJudge:
    """A second judge: the lexical scorer with a stricter support threshold, so the two can disagree."""
    scorer = LexicalScorer(support_threshold=0.95)
    scorer.name = "strict"
    return ScorerJudge(scorer)


def make_trace(sid: str, spec: tuple, answer: str | None = None) -> Trace:
    question, reference, relevant, retrieved, candidates, text, outcome = spec
    ctx = [Chunk(chunk_id=f"{d}#0", doc_id=d, rank=r, score=1 / r, text=DOCS[d], title=d.upper(),
                          signals={"dense_rank": float(r), "bm25_rank": float(len(retrieved) - r + 1),
                                   "rrf_score": 1 / (60 + r)})
           for r, d in enumerate(retrieved, 1)]
    cands = [Candidate(chunk_id=f"{d}#0", doc_id=d, rank=len(retrieved) + 4 + i, score=0.001)
             for i, d in enumerate(candidates)]
    return Trace(sample_id=sid, question=question, reference=reference, relevant_doc_ids=relevant, contexts=ctx,
                 candidates=cands, answer=answer if answer is not None else text, outcome=outcome,
                 error="TimeoutError: the model did not answer" if outcome == "error" else None,
                 latency_ms={"retrieve": 12.0, "generate": 80.0, "total": 92.0})


def make_run(run_dir: Path, answers: dict[str, str] | None = None) -> Path:
    """A run folder as `ragdoctor run` + `eval` + `diagnose` write it, made with the project's own code."""
    run_dir.mkdir(parents=True, exist_ok=True)
    traces = [make_trace(sid, spec, (answers or {}).get(sid)) for sid, spec in SAMPLES.items()]
    for t in traces:
        append_json_line(run_dir / "traces.jsonl", t)
    (run_dir / "run_summary.json").write_text(json.dumps(summarize_traces(traces)), encoding="utf-8")
    ev = evaluate([t for t in traces], metrics=[*LLM_METRICS, "recall@5", "mrr@10"],
                  judges=[ScorerJudge(LexicalScorer()), strict_lexical(), LabelsJudge()], run=run_dir,
                  progress=False)
    RunFolder(run_dir).write_diagnoses(*diagnose(ev.judgements))
    return run_dir


def synthetic_run(run_dir: Path, n: int, seed: int = 0) -> Path:
    """A run of ``n`` samples with two judges, claims, chunk verdicts, unmeasured results and 20 ranked chunks each:
    the shape (not the meaning) of a large real run, written without any judge."""
    rng = random.Random(seed)
    run_dir.mkdir(parents=True, exist_ok=True)
    judgements = []
    with open(run_dir / "traces.jsonl", "w", encoding="utf-8") as fh:
        for i in range(n):
            rel = [f"d{i % 50}"] if i % 10 else []
            ctx = [Chunk(chunk_id=f"d{(i + r * 7) % 50}#0", doc_id=f"d{(i + r * 7) % 50}", rank=r + 1,
                                  score=1 / (r + 1), text=f"Chunk {r} of sample {i}. " * 12,
                                  signals={"dense_rank": float(r + 1), "bm25_rank": float(5 - r), "rrf_score": 0.03})
                   for r in range(5)]
            cands = [Candidate(chunk_id=f"d{(i + r) % 50}#1", doc_id=f"d{(i + r) % 50}", rank=r + 1, score=0.01)
                     for r in range(5, 20)]
            t = Trace(sample_id=f"s{i:05d}", question=f"Question {i} about topic {i % 50}?", reference=f"Answer {i}.",
                      relevant_doc_ids=rel, contexts=ctx, candidates=cands, answer=f"Claim one of {i}. Claim two of {i}.",
                      latency_ms={"retrieve": 5.0, "generate": 50.0, "total": 55.0})
            fh.write(t.model_dump_json() + "\n")
            results = []
            for judge in ("lexical", "embedding"):
                for m in LLM_METRICS:
                    if rng.random() < 0.03:
                        results.append(MetricResult.unmeasured(m, judge, "judge failed: TimeoutError"))
                        continue
                    v = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0])
                    ev = {}
                    if m == "groundedness":
                        ev["claims"] = [{"claim": f"Claim {w} of {i}.", "verdict": rng.choice(["supported", "unsupported"]),
                                         "score": rng.random(), "chunk_id": ctx[0].chunk_id, "sentence": "Chunk 0."}
                                        for w in ("one", "two")]
                    elif m == "context_precision":
                        ev["chunks"] = [{"chunk_id": c.chunk_id, "relevant": rng.random() < .5, "score": .5} for c in ctx]
                    elif m == "answer_correctness":
                        ev.update(precision=v, recall=v)
                    results.append(MetricResult.ok(m, judge, v, **ev))
            results.append(MetricResult.ok("recall@5", "labels", rng.choice([0.0, 1.0])) if rel else
                           MetricResult.not_applicable("recall@5", "labels", "no relevant documents (unanswerable)"))
            judgements.append(Judgement(sample_id=t.sample_id, results=results, trace=t, eval_hash="x"))
    with open(run_dir / "results.jsonl", "w", encoding="utf-8") as fh:
        for j in judgements:
            fh.write(j.model_dump_json() + "\n")
    write_outputs(RunFolder(run_dir), judgements, [])
    RunFolder(run_dir).write_diagnoses(*diagnose(judgements))
    return run_dir


def retrieval_lab_json(chosen_gain: float) -> dict:
    """A retrieval lab result over 120 made-up queries: the current hybrid RRF, a z-score setting ``chosen_gain``
    better on every query, and dense 0.1 worse (eval/retrieval_lab.py's own verdict)."""
    import numpy as np

    from eval import retrieval_lab as lab

    halves = np.array(["choose", "confirm"] * 60)
    base = np.random.default_rng(1).uniform(0.3, 0.7, 120)
    per_query = {"hybrid rrf": base, "hybrid zscore w=0.5": base + chosen_gain, "dense": base - 0.1}
    rows = [{"name": n, **lab.Setting("hybrid").__dict__, "config": {"retrieval": {"mode": "hybrid"}},
             "ndcg@10": float(v.mean()), "recall@100": 1.0, "ndcg@10_choose": float(v[halves == "choose"].mean()),
             "ndcg@10_confirm": float(v[halves == "confirm"].mean())} for n, v in per_query.items()]
    return lab._verdict(rows, per_query, halves, lab.Setting("hybrid"), 120, None, seed=0)
